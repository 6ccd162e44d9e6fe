# Several nginx nodes sharing one PostgreSQL store (issue #17): a real PostgreSQL
# (t/pg-server: Debian's server, initdb in a temporary directory, a loopback port) and three nginx
# instances on loopback, each with the same signin_store URI and the same key file, as three
# machines behind a load balancer would be.
#   - a token issued through node 1 is exchanged through node 2; the session works on node 3,
#     through the API and through signin_require; a sign-out on one node ends it on the others
#   - signin_session_cache: a node that remembers sessions sees a sign-out elsewhere within its bound
#   - signin-admin on the shared store, and signin-admin copy of an LMDB store into PostgreSQL
#   - a database that cannot be reached answers 503 and the URI's password is not logged
#   - the sensitive endpoints' per-client limit and the per-address send limit count every node's
#   - the password back-off counts every node's failures
#   - 50 concurrent exchanges of one token spread over the three nodes: exactly one session
#   - kill -9 of a node, and a PostgreSQL restart, while clients sign in: every sign-in that was
#     answered 200 still works afterwards; during the outage the answer is 503, and the nodes
#     recover by themselves when the database is back
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep time);
use POSIX ();
use lib 't/lib'; use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
my $pgdir = tempdir('ngx_signin_pg.XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{TEST_KEEP});
my $url = `$root/t/pg-server start $pgdir/pg 2>$pgdir/why`;
if ($? != 0) {
    open my $fh, '<', "$pgdir/why"; local $/; my $why = <$fh> // ''; $why =~ s/\s+$//;
    plan skip_all => "no PostgreSQL server could start: $why";
}
chomp $url;
END { system("$root/t/pg-server", 'stop', "$pgdir/pg") if $pgdir && -d "$pgdir/pg" }

my $key = "$pgdir/signin.key";
my $origin;    # node 1's: the site's one origin, whichever node answers
sub conf {
    my ($extra) = @_;
    $extra //= '';
    return qq{
    $extra
    signin_store $url;
    signin_secret_key $key;
    signin_origin $origin;
    signin_registration on;
    signin_token_resend 0;
    signin_delivery /_signin/deliver;
    signin_passwords on;
    signin_limits zone=signin:1m;          # per node; the password back-off is in the database
    signin_limit_sensitive 100000r/m;      # the load below comes from one client
    signin_limit_address 100000r/h;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
        location = /metrics { signin_metrics; }
        location /app/ {
            signin_require on;
            proxy_set_header X-User "\$signin_user_email";
            proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
        }
        location /_legacy/ { allow 127.0.0.1; deny all; return 200 "user=\$http_x_user"; }
    }
};
}

my @n = map { SigninTest->new } 1 .. 3;
$origin = $n[0]->origin;
$_->run(http => conf()) for @n;    # node 1 first: it makes the key file the others read

my %O = (origin => $origin);
my $seq = 0;

# A token to `email`, asked of node `via` (its mailbox gets the delivery).
sub token_via {
    my ($via, $email) = @_;
    my $r = $n[$via]->req(POST => '/auth/register', json => { email => $email }, finished => 1);
    die "register answered $r->{status}: $r->{content}" unless $r->{status} == 202;
    my $m = $n[$via]->last_email($email) or die "no email to $email";
    return $m->{token};
}

# ---- one set of users, tokens and sessions
{
    my $email = 'across@example.com';
    my $tok = token_via(0, $email);
    my $r = $n[1]->req(POST => '/auth/token', json => { token => $tok });
    is $r->{status}, 200, 'a token issued through node 1 is exchanged through node 2' or diag $r->{content};
    my $bearer = $r->{json}{access_token};
    $r = $n[2]->req(GET => '/auth/me', headers => { authorization => "Bearer $bearer" });
    is $r->{status}, 200, 'its bearer token works on node 3';
    is $r->{json}{email}, $email, 'as the same account';
    $r = $n[0]->req(POST => '/auth/token', json => { token => $tok });
    is $r->{status}, 401, 'and the token is spent for node 1 too';
    is $r->{json}{code}, 'invalid_token', '... invalid_token';

    $tok = token_via(2, $email);
    $r = $n[1]->req(POST => '/auth/session', json => { token => $tok }, headers => {%O});
    is $r->{status}, 200, 'a cookie session made on node 2' or diag $r->{content};
    my $cookie = SigninTest::set_cookie_pair($r);
    $r = $n[2]->req(GET => '/app/page', headers => { cookie => $cookie });
    is $r->{status}, 200, 'passes signin_require on node 3';
    is $r->{content}, "user=$email", 'which tells the upstream who it is';
    $r = $n[0]->req(GET => '/auth/me', headers => { cookie => $cookie });
    is $r->{status}, 200, 'and GET /me on node 1';
    $r = $n[0]->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, %O });
    is $r->{status}, 204, 'a sign-out on node 1' or diag "$r->{status} $r->{content}";
    for my $i (1, 2) {
        $r = $n[$i]->req(GET => '/auth/me', headers => { cookie => $cookie });
        is $r->{status}, 401, 'ends the session on node ' . ($i + 1) . ' at once (no cache)';
    }
    $r = $n[1]->req(GET => '/app/page', headers => { cookie => $cookie });
    is $r->{status}, 401, 'and at the gate';
}

# ---- signin_session_cache: a fourth node that remembers sessions for 1.5 s
{
    my $c = SigninTest->new;
    $c->run(http => conf('signin_session_cache 1500ms;'));
    my $tok = token_via(0, 'cached@example.com');
    my $r = $n[0]->req(POST => '/auth/session', json => { token => $tok }, headers => {%O});
    my $cookie = SigninTest::set_cookie_pair($r);
    my @seen = map { $c->req(GET => '/auth/me', headers => { cookie => $cookie })->{status} } 1 .. 4;
    is "@seen", '200 200 200 200', 'the caching node answers GET /me (both workers fill their cache)';
    $r = $n[0]->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, %O });
    is $r->{status}, 204, 'a sign-out on node 1';
    my $t0 = time;
    is $n[1]->req(GET => '/auth/me', headers => { cookie => $cookie })->{status}, 401, 'a node without the cache sees it at once';
    my $stale = $c->req(GET => '/auth/me', headers => { cookie => $cookie })->{status};
    ok time - $t0 < 1.4 ? $stale == 200 : 1, 'the caching node may still answer from its cache within signin_session_cache';
    my $gone = $c->wait_for(sub { $c->req(GET => '/auth/me', headers => { cookie => $cookie })->{status} == 401 }, timeout => 5);
    ok $gone, 'and not after it';
    ok time - $t0 <= 1.5 + 1.0, '... the sign-out reached it within the bound (1.5 s, and a request)' or diag time - $t0;
    $c->done;
}

# ---- signin-admin on a PostgreSQL store, and the copy of an LMDB store into an empty one
SKIP: {
    my $admin = $ENV{SIGNIN_ADMIN};
    skip 'SIGNIN_ADMIN is not set', 8 unless $admin && -x $admin;
    my $out = `'$admin' --store '$url' --json user across\@example.com 2>&1`;
    is $? >> 8, 0, 'signin-admin --store postgresql://... reads the shared store' or diag $out;
    like $out, qr/"email":"across\@example.com"/, '... the account made through the nodes';
    my $lmdb = "$pgdir/lmdb";
    $out = `'$admin' --store '$lmdb' --create invite copied\@example.com --role staff 2>&1`;
    is $? >> 8, 0, 'an LMDB store with an account' or diag $out;
    system('psql', $url, '-qAt', '-c', 'CREATE DATABASE copied') == 0 or die 'createdb';
    (my $target = $url) =~ s{/signin$}{/copied};
    $out = `'$admin' --store '$lmdb' copy '$target' 2>&1`;
    is $? >> 8, 0, 'signin-admin copy into an empty PostgreSQL store' or diag $out;
    like $out, qr/copied 1 accounts/, '... says what it copied';
    $out = `'$admin' --store '$target' --json user copied\@example.com 2>&1`;
    like $out, qr/"roles":\["staff"\]/, '... and the account is there, with its role' or diag $out;
    $out = `'$admin' --store '$lmdb' copy '$url' 2>&1`;
    is $? >> 8, 1, 'a copy into a store that holds accounts is refused';
    like $out, qr/not empty/, '... saying why';
}

# ---- a database that cannot be reached: 503, and the URI's password is never logged
{
    my $port = ($url =~ /:(\d+)\//)[0];
    my $bad = SigninTest->new;
    (my $conf = conf()) =~ s{signin_store \S+;}{signin_store postgresql://signin:pw-must-not-leak\@127.0.0.1:$port/no_such_database;};
    $bad->run(http => $conf);
    my $r = $bad->req(POST => '/auth/register', json => { email => 'nowhere@example.com' });
    is $r->{status}, 503, 'a database that does not exist: 503';
    is $r->{json}{code}, 'storage_unavailable', '... storage_unavailable';
    $r = $bad->req(GET => '/auth/me', headers => { authorization => 'Bearer ' . ('A' x 43) });
    ok $r->{status} == 503 || $r->{status} == 401, 'GET /me: 503 (or 401 for a token that cannot be one)';
    my $log = $bad->error_log;
    like $log, qr/no_such_database/, 'error.log says what failed';
    unlike $log, qr/pw-must-not-leak/, 'and never the password of the URI';
    $bad->done(allow => qr/no_such_database|PostgreSQL/);
}

# ---- the per-client limit of the sensitive endpoints holds across nodes (signin_limit_sensitive)
{
    system('psql', $url, '-qAt', '-c', 'CREATE DATABASE limited') == 0 or die 'createdb';
    (my $limited = $url) =~ s{/signin$}{/limited};
    my @l = map { SigninTest->new } 1 .. 2;
    for my $node (@l) {
        (my $c = conf()) =~ s{signin_store \S+;}{signin_store $limited;};
        $c =~ s{signin_limit_sensitive \S+;}{signin_limit_sensitive 4r/m;};
        $node->run(http => $c);
    }
    my @st;
    for my $i (0 .. 3) {  # two requests on each node: within each node's own zone (4 a minute)
        push @st, $l[$i % 2]->req(POST => '/auth/login', json => { email => "limit$i\@example.com" })->{status};
    }
    is "@st", '202 202 202 202', 'four sensitive requests over two nodes: the limit (4 a minute) allows them';
    my $r = $l[0]->req(POST => '/auth/login', json => { email => 'limit5@example.com' });
    is $r->{status}, 429, 'the fifth is refused on a node that counted only two itself';
    ok(($r->{headers}{'retry-after'} // 0) >= 1, '... with Retry-After');
    $r = $l[1]->req(GET => '/auth/.well-known/jwks.json');
    isnt $r->{status}, 429, 'a signed-in bucket request is not a sensitive one';
    $_->done for @l;
}

# ---- the per-address send limit holds across nodes (signin_limit_address)
{
    system('psql', $url, '-qAt', '-c', 'CREATE DATABASE sends') == 0 or die 'createdb';
    (my $sends = $url) =~ s{/signin$}{/sends};
    my @l = map { SigninTest->new } 1 .. 2;
    for my $node (@l) {
        (my $c = conf()) =~ s{signin_store \S+;}{signin_store $sends;};
        $c =~ s{signin_limit_address \S+;}{signin_limit_address 2r/h;};
        $node->run(http => $c);
    }
    my $email = 'often@example.com';
    for my $i (0 .. 1) {
        my $r = $l[$i]->req(POST => '/auth/register', json => { email => $email }, finished => 1);
        is $r->{status}, 202, 'a code for the address through node ' . ($i + 1);
        ok $l[$i]->last_email($email), '... sent';
    }
    my $r = $l[0]->req(POST => '/auth/login', json => { email => $email }, finished => 1);
    is $r->{status}, 202, 'a third request (the limit is 2 an hour) gets the same answer';
    $l[0]->assert_nothing_sent($email, count => 1, name => 'and no third email: node 1 sent one itself, node 2 the other');
    $_->done for @l;
}

# ---- the password back-off holds across nodes: 5 free failures in all, then a wait on every node
{
    my $email = 'pw@example.com';
    $n[0]->register_password($email, 'correct horse battery staple');
    my @st;
    for my $i (0 .. 4) {  # two failures on node 1, two on node 2, one on node 3
        my $r = $n[$i % 3]->password_req(token => $email, 'wrong password ' . $i);
        push @st, $r->{status};
    }
    is "@st", '401 401 401 401 401', 'five wrong passwords over the three nodes: each refused';
    my $r = $n[1]->password_req(token => $email, 'correct horse battery staple');
    is $r->{status}, 429, 'the sixth try waits, on a node that saw two of them (the back-off is shared)'
        or diag "$r->{status} $r->{content}";
    is $r->{json}{code}, 'rate_limited', '... rate_limited';
    ok(($r->{headers}{'retry-after'} // 0) >= 1, '... with Retry-After');
}

# ---- 50 concurrent exchanges of one token over the three nodes
{
    my $tok = token_via(0, 'race@example.com');
    my $out = "$pgdir/race";
    my @kids;
    for my $k (0 .. 49) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my $r = $n[$k % 3]->req(POST => '/auth/token', json => { token => $tok });
            SigninTest::append_line($out, $r->{status});
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid $_, 0 for @kids;
    my @st = SigninTest::read_lines($out);
    my %c;
    $c{$_}++ for @st;
    is scalar(@st), 50, '50 exchanges were answered';
    is $c{200} // 0, 1, 'exactly one made a session' or diag explain \%c;
    is $c{401} // 0, 49, 'the 49 others found the token spent' or diag explain \%c;
    my $sessions = `psql '$url' -qAt -c "SELECT count(*) FROM signin_sessions s JOIN signin_user_email e ON e.user_id = s.user_id WHERE position(convert_to('race\@example.com', 'UTF8') IN e.addr) > 0"`;
    chomp $sessions;
    is $sessions, '1', 'one session in the database';
}

# ---- clients sign in while a node is killed and PostgreSQL restarts: nothing acknowledged is lost
# Four clients a node at once, so that a worker's write batch holds several sign-ins (one
# transaction, one commit for them all) when the node or the database dies under it.
sub clients {
    my ($acks, $seconds) = @_;
    my @kids;
    for my $c (0 .. 11) {
        my $k = $c % 3;
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my $end = time + $seconds;
            my $i = 0;
            while (time < $end) {
                $i++;
                my $email = "load$c-$i-$$\@example.com";
                my $via = $n[$k];
                my $r = $via->req(POST => '/auth/register', json => { email => $email }, finished => 1);
                next unless ($r->{status} // 0) == 202;
                my $m = eval { $via->last_email($email, timeout => 1) } or next;
                $r = $n[($k + 1) % 3]->req(POST => '/auth/token', json => { token => $m->{token} });
                if (($r->{status} // 0) == 200) {
                    SigninTest::append_line($acks, $r->{json}{access_token});
                } elsif (($r->{status} // 0) != 503 && ($r->{status} // 0) != 599) {
                    SigninTest::append_line("$acks.odd", "$r->{status} $r->{content}");
                }
            }
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    return @kids;
}

sub all_work {
    my ($acks, $name) = @_;
    -e $acks or return fail("$name: no sign-in was acknowledged");
    my @tokens = SigninTest::read_lines($acks);
    my $lost = grep {
        my $r = $n[2]->req(GET => '/auth/me', headers => { authorization => "Bearer $_" });
        $r->{status} != 200
    } @tokens;
    ok @tokens >= 5, "$name: " . scalar(@tokens) . ' sign-ins were acknowledged';
    is $lost, 0, "$name: every one of them still works";
}

{
    my $acks = "$pgdir/acks-kill";
    my @kids = clients($acks, 3);
    sleep 1.2;
    # node 2 dies at once, workers and master: its clients get errors, no one is told a lie
    my @pids = ($n[1]->master_pid, $n[1]->worker_pids);
    kill 'KILL', @pids;
    waitpid $_, 0 for @kids;
    all_work($acks, 'kill -9 of node 2');
    ok !-s "$acks.odd", 'no answer but 200, 503 or a dropped connection' or diag `cat $acks.odd`;
    # the sign-ins were committed in batches of several: what was tested is the group commit
    my ($jobs, $batches) = (0, 0);
    for my $i (0, 2) {
        my $m = $n[$i]->req(GET => '/metrics')->{content} // '';
        $jobs += $1 if $m =~ /^signin_write_batch_size_sum (\d+)$/m;
        $batches += $1 if $m =~ /^signin_write_batch_size_count (\d+)$/m;
    }
    ok $batches > 0 && $jobs > $batches, "write batches held several jobs ($jobs jobs in $batches batches)";
    $n[1]->{running} = 0;
    # its ports are bound again below: wait until every process of the killed node is gone
    $n[1]->wait_for(sub { !grep { kill(0, $_) && !SigninTest::exited($_) } @pids }, timeout => 10)
        or diag 'node 2 was still there 10 s after kill -9';
    unlink $n[1]->prefix . '/nginx.pid';
    $n[1]->run(http => conf());
}

{
    my $acks = "$pgdir/acks-restart";
    my @kids = clients($acks, 4);
    sleep 1;
    system("$root/t/pg-server", 'kill', "$pgdir/pg") == 0 or die 'pg-server kill';
    my $down = $n[0]->req(POST => '/auth/register', json => { email => 'down@example.com' });
    is $down->{status}, 503, 'with the database down, a sign-in request is answered 503';
    sleep 0.5;
    system("$root/t/pg-server", 'restart', "$pgdir/pg") == 0 or die 'pg-server restart';
    waitpid $_, 0 for @kids;
    all_work($acks, 'PostgreSQL killed and restarted');
    ok !-s "$acks.odd", 'no answer but 200, 503 or a dropped connection' or diag `cat $acks.odd`;
    # recovered by itself: a full sign-in on every node
    for my $i (0 .. 2) {
        my $email = "after$i\@example.com";
        my $tok = $n[0]->wait_for(sub { eval { token_via($i, $email) } }, timeout => 10);
        ok $tok, 'node ' . ($i + 1) . ' recovered: a token request after the restart';
        my $r = $n[$i]->req(POST => '/auth/token', json => { token => $tok // '' });
        is $r->{status}, 200, 'node ' . ($i + 1) . ': and its exchange';
    }
}

$_->done for @n;
done_testing;
