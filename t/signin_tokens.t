# Email tokens:
# format and randomness, single use, lifetime, the three most recent stay valid, "usable token
# waiting", registration off by default, the account is created only at exchange,
# AlreadyRegistered, identical /login answers, groups, delivery failure cancels the token,
# tokens cross workers, and a token raced by 20 connections is exchanged once.
use strict; use warnings;
use Test::More;
use Time::HiRes qw(sleep time);
use POSIX ();
use IO::Socket::INET;
use MIME::Base64 qw(decode_base64);
use lib 't/lib'; use SigninTest;

my $n = 0;
sub addr { my ($p) = @_; $n++; return "$p$n\@example.com" }

sub conf {
    my (%o) = @_;
    my $reg = exists $o{registration} ? $o{registration} : 'signin_registration on;';
    my $deliver = $o{deliver} // 'location = /_signin/deliver { internal; signin_dev_mailbox; }';
    return qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    $reg
    signin_delivery /_signin/deliver;
    @{[ $o{extra} // '' ]}
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-Pid \$pid always;
        location /auth/ { signin_api; }
        $deliver
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
    @{[ $o{servers} // '' ]}
};
}

sub start { my (%o) = @_; my $t = SigninTest->new; $t->run(http => conf(%o), %{ $o{run} || {} }); return $t }

sub exchange {
    my ($t, $tok, $kind) = @_;
    return $kind && $kind eq 'bearer'
        ? $t->req(POST => '/auth/token', json => { token => $tok })
        : $t->req(POST => '/auth/session', json => { token => $tok }, headers => { origin => $t->origin });
}

sub err_is {
    my ($r, $status, $code, $name) = @_;
    is $r->{status}, $status, "$name: status $status" or diag "got $r->{status}: $r->{content}";
    is(($r->{json} || {})->{code}, $code, "$name: code $code") if defined $code;
}

# Deliveries run in the background after the 202. A request that must send nothing is made with
# finished => 1 (it returns once nginx has ended the request and its delivery, had it started one),
# and "nothing was sent" is asserted by $t->assert_nothing_sent once a control email, requested
# after it, has arrived. A control through /login needs an account with no token waiting:
sub login_control {
    my ($t, %o) = @_;
    my $a = addr('control');
    my $r = exchange($t, $t->request_token($a, %o));
    die "control account: $r->{status}" unless $r->{status} == 200;
    return { path => '/auth/login', email => $a, json => { $o{group} ? (group => $o{group}) : () } };
}

# ================================================================ defaults: resend 60 s, registration on
my $t = start();
{
    # format: 43 characters of base64url, 32 random bytes, all different
    my %seen;
    my @toks;
    for (1 .. 8) { push @toks, $t->request_token(addr('fmt')) }
    for my $tok (@toks) {
        like $tok, qr/^[A-Za-z0-9_-]{43}$/, "token is 43 characters of base64url ($tok)";
        (my $b64 = $tok) =~ tr{-_}{+/};
        is length(decode_base64("$b64=")), 32, 'token decodes to 32 bytes (256 bits)';
        $seen{$tok}++;
    }
    is scalar(keys %seen), 8, 'eight token requests gave eight different tokens';
    my %chars; $chars{$_}++ for map { split // } @toks;
    ok scalar(keys %chars) > 40, 'the tokens use the whole base64url alphabet (' . scalar(keys %chars) . ' distinct characters)';

    # single use
    my $r = exchange($t, $toks[0]);
    is $r->{status}, 200, 'first exchange 200' or diag $r->{content};
    err_is exchange($t, $toks[0]), 401, 'invalid_token', 'second exchange of the same token (/session)';
    err_is exchange($t, $toks[0], 'bearer'), 401, 'invalid_token', 'second exchange of the same token (/token)';
    $r = exchange($t, $toks[1], 'bearer');
    is $r->{status}, 200, 'bearer exchange 200' or diag $r->{content};
    err_is exchange($t, $toks[1], 'bearer'), 401, 'invalid_token', 'a bearer-exchanged token is spent for /token';
    err_is exchange($t, $toks[1]), 401, 'invalid_token', 'a bearer-exchanged token is spent for /session';

    # tokens that were never issued
    err_is exchange($t, 'A' x 43), 401, 'invalid_token', 'an unknown well-formed token';
    err_is exchange($t, 'short'), 401, 'invalid_token', 'a short token';
    err_is exchange($t, ''), 401, 'invalid_token', 'an empty token';
    my $mangled = $toks[2]; substr($mangled, 10, 1) = substr($mangled, 10, 1) eq 'a' ? 'b' : 'a';
    err_is exchange($t, $mangled), 401, 'invalid_token', 'a token with one character changed';
    err_is exchange($t, "$toks[2] "), 401, 'invalid_token', 'a token with a trailing space';
    err_is exchange($t, lc $toks[3]) , 401, 'invalid_token', 'a lowercased token' if lc($toks[3]) ne $toks[3];
    is exchange($t, $toks[2])->{status}, 200, 'the real token still works after the wrong guesses';
}

# "usable token already waiting": nothing is sent, success is still reported
{
    my $e = addr('wait');
    my $r1 = $t->req(POST => '/auth/register', json => { email => $e });
    is $r1->{status}, 202, 'first register 202';
    my $m1 = $t->last_email($e);
    ok $m1 && $m1->{token}, 'first register sent a token';
    is $m1->{purpose}, 'Registration', 'purpose Registration';
    is $m1->{tag}, 'auth.registration', 'tagged auth.registration';
    like $m1->{text} // '', qr/\Q$m1->{code}\E/, 'the email text carries the code';
    my $r2 = $t->req(POST => '/auth/register', json => { email => $e }, finished => 1);
    is $r2->{status}, 202, 'second register within the resend window: still 202';
    is $r2->{content}, $r1->{content}, 'with a byte-identical body';
    my $r3 = $t->req(POST => '/auth/register', json => { email => uc $e }, finished => 1);
    is $r3->{status}, 202, 'third register (address in upper case) 202';
    $t->assert_nothing_sent($e, count => 1, name => 'the repeated requests sent nothing');
    is exchange($t, $m1->{token})->{status}, 200, 'the waiting token still works';
    # spent: nothing is waiting any more, so a new request sends again
    my $r4 = $t->req(POST => '/auth/register', json => { email => $e });
    is $r4->{status}, 202, 'register after the token was spent 202';
    my $m4 = $t->last_email($e, count => 2);
    ok $m4, 'a spent token is not a waiting token: a new email is sent';
    is $m4 && $m4->{purpose}, 'AlreadyRegistered', 'and its purpose is AlreadyRegistered';
    my $control = login_control($t);
    my $r5 = $t->req(POST => '/auth/login', json => { email => $e }, finished => 1);
    is $r5->{status}, 202, 'login while the AlreadyRegistered token waits: 202';
    $t->assert_nothing_sent($e, count => 2, control => $control,
        name => 'the waiting token (of another purpose) suppresses the login email');
}

# /login answers the same for known and unknown addresses, and sends nothing for the unknown one
{
    my $known = addr('known');
    is exchange($t, $t->request_token($known))->{status}, 200, 'account created for the known address';
    my $unknown = addr('unknown');
    my $control = login_control($t);
    my $rk = $t->req(POST => '/auth/login', json => { email => $known }, finished => 1);
    my $ru = $t->req(POST => '/auth/login', json => { email => $unknown }, finished => 1);
    is $rk->{status}, 202, '/login known 202';
    is $ru->{status}, $rk->{status}, '/login unknown: same status';
    is $ru->{content}, $rk->{content}, '/login unknown: byte-identical body';
    my %skip = map { $_ => 1 } qw(date x-pid);
    my $hk = { map { $_ => $rk->{headers}{$_} } grep { !$skip{$_} } keys %{ $rk->{headers} } };
    my $hu = { map { $_ => $ru->{headers}{$_} } grep { !$skip{$_} } keys %{ $ru->{headers} } };
    is_deeply $hu, $hk, '/login unknown: the same headers (all but Date)';
    ok !$rk->{headers}{'set-cookie'}, '/login sets no cookie';
    my $m = $t->last_email($known, purpose => 'SignIn');
    ok $m && $m->{token}, '/login known: a SignIn token is sent';
    is $m && $m->{tag}, 'auth.sign_in', 'tagged auth.sign_in';
    $t->assert_nothing_sent($unknown, control => $control, name => '/login unknown: nothing is sent');
    my $r = exchange($t, $m->{token});
    is $r->{status}, 200, 'the SignIn token signs in';
    is $r->{json}{email}, $known, 'as the known address';
}

# groups separate accounts
{
    my $e = addr('group');
    my $tg = $t->request_token($e, group => 'tenant-a');
    my $m = $t->last_email($e);
    is $m->{group}, 'tenant-a', 'the delivery names the group';
    my $ra = exchange($t, $tg);
    is $ra->{status}, 200, 'sign in to group tenant-a';
    is $ra->{json}{group_id}, 'tenant-a', 'user.group_id is tenant-a';
    my $td = $t->request_token($e);
    my $md = $t->last_email($e, count => 2);
    is $md->{purpose}, 'Registration', 'the same address in the default group is a new registration';
    my $rd = exchange($t, $td);
    is $rd->{status}, 200, 'sign in to the default group';
    isnt $rd->{json}{id}, $ra->{json}{id}, 'a different user id';
    isnt $rd->{json}{group_id}, 'tenant-a', 'a different group_id';
    is $rd->{json}{email}, $ra->{json}{email}, 'the same address';
    my $control = login_control($t, group => 'tenant-b');
    my $r = $t->req(POST => '/auth/login', json => { email => $e, group => 'tenant-b' }, finished => 1);
    is $r->{status}, 202, '/login in a group with no account for the address: 202';
    $t->assert_nothing_sent($e, count => 2, control => $control, name => 'and nothing is sent');
    my $tl = $t->request_token($e, login => 1, group => 'tenant-a');
    $r = exchange($t, $tl);
    is $r->{json}{id}, $ra->{json}{id}, '/login with group tenant-a signs in to the tenant-a account';
}

# a token issued by one worker is exchanged by the other
{
    my @w = $t->worker_pids;
    is scalar(@w), 2, 'two workers';
    my $crossed = 0;
    for (1 .. 60) {
        my $e = addr('cross');
        my $r = $t->req(POST => '/auth/register', json => { email => $e });
        my $m = $t->last_email($e) or next;
        my $x = exchange($t, $m->{token}, 'bearer');
        next if ($x->{headers}{'x-pid'} // '') eq ($r->{headers}{'x-pid'} // '');
        $crossed = 1;
        is $x->{status}, 200, "token issued by worker $r->{headers}{'x-pid'} exchanged by worker $x->{headers}{'x-pid'}" or diag $x->{content};
        my %ok;
        for (1 .. 60) {
            my $me = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $x->{json}{access_token}" });
            $ok{ $me->{headers}{'x-pid'} // '?' } = $me->{status};
            last if keys %ok >= 2;
        }
        is scalar(grep { $_ == 200 } values %ok), 2, 'the bearer session works in both workers' or diag explain \%ok;
        last;
    }
    ok $crossed, 'a token request and its exchange were answered by different workers';
}

# 20 connections race to exchange one token: exactly one wins
{
    my $tok = $t->request_token(addr('race'));
    my $body = qq({"token":"$tok"});
    my $req = "POST /auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
            . length($body) . "\r\nConnection: close\r\n\r\n$body";
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $go = time + 0.3;    # every child connected by then: they send at once
    my @kids;
    for my $i (1 .. 20) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            close $rd;
            my $status = 0;
            eval {
                my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port, Timeout => 10) or die;
                sleep 0.001 while time < $go;
                print $s $req;
                local $/;
                my $resp = <$s> // '';
                ($status) = $resp =~ m{^HTTP/1\.\d (\d+)};
            };
            syswrite $wr, "$i " . ($status || 0) . "\n";
            POSIX::_exit(0);    # never run the parent's destructors (they would stop nginx)
        }
        push @kids, $pid;
    }
    close $wr;
    my @lines = <$rd>;
    waitpid $_, 0 for @kids;
    my %by; $by{ (split ' ', $_)[1] }++ for @lines;
    is scalar(@lines), 20, 'twenty answers';
    is $by{200} // 0, 1, 'exactly one exchange succeeded' or diag explain \%by;
    is $by{401} // 0, 19, 'the nineteen others answered 401' or diag explain \%by;
}
$t->done;

# ================================================================ resend 0: every request issues a token
$t = start(extra => 'signin_token_resend 0;');
{
    # the account is created only when the registration token is exchanged
    my $e = addr('pending');
    my $reg = $t->request_token($e);
    my $control = login_control($t);
    my $r = $t->req(POST => '/auth/login', json => { email => $e }, finished => 1);
    is $r->{status}, 202, '/login for a pending registration: 202';
    $t->assert_nothing_sent($e, count => 1, control => $control,
        name => '/login before the registration token is exchanged sends nothing (no account yet)');
    $r = exchange($t, $reg);
    is $r->{status}, 200, 'the registration token creates the account';
    my $uid = $r->{json}{id};
    ok $uid, 'user id';
    my $login = $t->request_token($e, login => 1);
    ok $login, '/login after the exchange sends a token';
    is $t->last_email($e, count => 2)->{purpose}, 'SignIn', 'of purpose SignIn';
    is exchange($t, $login)->{json}{id}, $uid, 'which signs in to the same user';

    # AlreadyRegistered: registering an existing address; its token signs in to the same user
    my $again = $t->request_token($e);
    my $m = $t->last_email($e, count => 3);
    is $m->{purpose}, 'AlreadyRegistered', 'registering an existing address sends AlreadyRegistered';
    is $m->{tag}, 'auth.already_registered', 'tagged auth.already_registered';
    $r = exchange($t, $again);
    is $r->{status}, 200, 'the AlreadyRegistered token signs in' or diag $r->{content};
    is $r->{json}{id}, $uid, 'to the same user id';
    is $r->{json}{created_at}, exchange($t, $t->request_token($e, login => 1))->{json}{created_at}, 'the account was not re-created';

    # the three most recent tokens stay valid, the fourth-newest does not
    my @tok = map { $t->request_token($e, login => 1) } 1 .. 4;
    is scalar(keys %{ { map { $_ => 1 } @tok } }), 4, 'four requests (resend 0) gave four tokens';
    err_is exchange($t, $tok[0]), 401, 'invalid_token', 'the oldest of four tokens is no longer valid';
    is exchange($t, $tok[$_])->{status}, 200, "token " . ($_ + 1) . " of 4 is valid" for 1 .. 3;

    # a newer token does not invalidate an older one (while three or fewer)
    my @two = map { $t->request_token($e, login => 1) } 1 .. 2;
    is exchange($t, $two[0])->{status}, 200, 'an older token stays valid after a newer one is issued';
    is exchange($t, $two[1])->{status}, 200, 'and so does the newer one';
}
$t->done;

# ================================================================ a short token lifetime
$t = start(extra => 'signin_token_ttl 500ms;');
{
    my $fresh = $t->request_token(addr('ttl'));
    my $old = $t->request_token(addr('ttl'));
    my $issued = time;    # both tokens were issued before this
    is exchange($t, $fresh)->{status}, 200, 'a token used within signin_token_ttl works';
    $t->sleep_until($issued + 0.5 + 0.05);
    err_is exchange($t, $old), 401, 'invalid_token', 'a token used after signin_token_ttl (500ms) has expired';
    err_is exchange($t, $old, 'bearer'), 401, 'invalid_token', 'and is refused by /token too';
}
$t->done;

# ================================================================ registration off by default
# The control of "nothing is sent" below signs in to an account that exists already: it was made
# with registration on, in a store this nginx then starts on.
my ($control, $seed_store, $seed_pg);
{
    my $seed = start();
    $control = login_control($seed);
    $seed_store = $seed->store;
    $seed_pg = $seed->{pg_store};  # over PostgreSQL (SIGNIN_TEST_PG): its schema
    $seed->done;
}
$t = SigninTest->new;
if ($seed_pg) {
    $t->{pg_store} = $seed_pg;  # the same schema: %%STORE%% names it
} else {
    mkdir $t->store or die "mkdir: $!";
    system('cp', "$seed_store/data.mdb", $t->store . '/') == 0 or die 'cp data.mdb';
}
$t->run(http => conf(registration => ''));
{
    my $e = addr('noreg');
    my $r = $t->req(POST => '/auth/register', json => { email => $e }, finished => 1);
    err_is $r, 403, 'registration_disabled', '/register while registration is off (default)';
    like $r->{headers}{'cache-control'} // '', qr/no-store/, 'with no-store';
    $r = $t->req(POST => '/auth/login', json => { email => $e }, finished => 1);
    is $r->{status}, 202, '/login for an unknown address still answers 202';
    $t->assert_nothing_sent($e, control => $control, name => 'no email was sent');
}
$t->done;

# ================================================================ a failed delivery cancels the token
# The delivery goes to a second server that mirrors the email into the dev mailbox (so the test can
# read the token) and then answers 503, i.e. the delivery fails. With no retries (t/signin_outbox.t
# tries again), the first failure gives the delivery up.
sub failing_conf {
    my ($status) = @_;
    return (
        extra => 'signin_delivery_retries 0;',
        deliver => q{location = /_signin/deliver {
            internal;
            proxy_method POST;
            proxy_pass_request_headers off;
            proxy_set_header Content-Type application/json;
            proxy_set_body $signin_delivery_json;
            proxy_pass http://127.0.0.1:%%PORT2%%/mailer;
        }},
        servers => qq{server {
        listen 127.0.0.1:%%PORT2%%;
        location = /mailer { mirror /copy; mirror_request_body on; proxy_pass http://127.0.0.1:%%PORT2%%/status; }
        location = /copy { internal; proxy_pass http://127.0.0.1:%%PORT%%/_dev/mailbox; }
        location = /status { return $status; }
    }},
        run => { wait_ports => [] },
    );
}
$t = SigninTest->new;
$t->run(http => conf(failing_conf(503)), wait_ports => [$t->port, $t->port2]);
{
    # The delivery is sent apart from the request: the exchange is made once the audit trail
    # says the delivery was given up.
    my $c = $t->connection;
    my $e = addr('undelivered');
    my $r = $t->req(POST => '/auth/register', json => { email => $e }, conn => $c);
    is $r->{status}, 202, 'a failed delivery is not told to the client: 202';
    is $r->{content}, '{"status":"sent"}', 'with the usual body';
    my $m = $t->last_email($e);
    ok $m && $m->{token}, 'the mailer saw the token before failing';
    ok $t->wait_for(sub { my (undef, $a) = $t->admin('audit', 50); $a =~ /delivery\.failed[^\n]*\Q$e\E|\Q$e\E[^\n]*delivery\.failed/ }, timeout => 5),
        'the failed delivery is audited';
    err_is $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin }, conn => $c),
        401, 'invalid_token', 'the token of a failed delivery is cancelled';
    # nothing is waiting now: a new request issues (and again fails to deliver) a new token
    $r = $t->req(POST => '/auth/register', json => { email => $e });
    my $m2 = $t->last_email($e, count => 2);
    ok $m2, 'a cancelled token is not a waiting token: the next request tries again';
    like $t->error_log, qr/deliver/i, 'the failed delivery is logged';
    unlike $t->error_log, qr/\Q$m->{token}\E/, 'without the token';

    # control: the same path with a mailer that answers 204 delivers a working token
    $t->reload(http => conf(failing_conf(204)));
    my $e2 = addr('delivered');
    $c = $t->connection;
    $t->req(POST => '/auth/register', json => { email => $e2 }, conn => $c);
    my $m3 = $t->last_email($e2);
    ok $m3, 'control: the mailer saw the token';
    is $t->req(POST => '/auth/session', json => { token => $m3->{token} }, headers => { origin => $t->origin }, conn => $c)->{status},
        200, 'control: a token whose delivery succeeded works';
}
$t->done;
done_testing;
