# signin_registration_check: before a registration writes or sends anything, the application's
# location is asked {email, group, method, client}. A real HTTP server here plays the
# application: a 2xx allows (its roles go to the new account), a 403 refuses (403
# registration_refused, no email, nothing in the store), anything else fails closed (503
# registration_check_failed), a hang too once the location's timeout is over. Every registration
# asks, whether or not the address has an account, so neither the answer nor its time tells
# which; nginx -t refuses a location that is missing or that anyone could reach.
use strict; use warnings;
use Test::More;
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use List::Util qw(sum);
use Time::HiRes qw(time sleep);
use lib 't/lib'; use SigninTest;
use JSON::PP ();
use HTTP::Tiny;


# The application: answers each POST as the file `answer` says when the POST arrives
# ({status, body, delay, hang}), and logs each one ({body, cookie}) a JSON line.
package Application {
    sub new {
        my ($class, %o) = @_;
        my $dir = File::Temp::tempdir(CLEANUP => 1);
        my $self = bless { dir => $dir, port => $o{port}, owner => $$ }, $class;
        $self->answer(status => 200);
        open my $touch, '>>', "$dir/asked.log" or die $!;
        close $touch;
        my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $o{port}, Listen => 128,
            ReuseAddr => 1) or die "application: listen on $o{port}: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
            $self->serve($listen);
            POSIX::_exit(0);
        }
        close $listen;
        $self->{pid} = $pid;
        return $self;
    }
    sub answer {
        my ($self, %o) = @_;
        open my $f, '>', "$self->{dir}/answer.new" or die $!;
        print $f $SigninTest::JSON->encode(\%o), "\n";
        close $f;
        rename "$self->{dir}/answer.new", "$self->{dir}/answer" or die $!;
    }
    sub asked {
        my ($self) = @_;
        return map { $SigninTest::JSON->decode($_) } grep { /\S/ } SigninTest::read_lines("$self->{dir}/asked.log");
    }
    sub serve {
        my ($self, $listen) = @_;
        my $sel = IO::Select->new($listen);
        my (%buf, %due);
        my $deadline = Time::HiRes::time() + 900;    # bounded: it outlives no test
        while (Time::HiRes::time() < $deadline) {
            for my $s ($sel->can_read(0.002)) {
                if ($s == $listen) {
                    my $c = $listen->accept or next;
                    $sel->add($c);
                    $buf{$c} = '';
                    next;
                }
                my $got = sysread($s, $buf{$s}, 65536, length $buf{$s});
                if (!$got) { $sel->remove($s); delete $buf{$s}; delete $due{$s}; close $s; next; }
                next if $due{$s};
                my ($head, $body) = $buf{$s} =~ /^(.*?\r\n\r\n)(.*)$/s or next;
                my ($len) = $head =~ /^content-length:\s*(\d+)/mi;
                next if length($body) < ($len // 0);
                my ($cookie) = $head =~ /^cookie:\s*(.*?)\r$/mi;
                my ($type) = $head =~ /^content-type:\s*(.*?)\r$/mi;
                SigninTest::append_line("$self->{dir}/asked.log", $SigninTest::JSON->encode(
                    { body => substr($body, 0, $len // 0), cookie => $cookie, type => $type,
                      line => ($head =~ /^(\S+ \S+)/)[0] }) . "\n");
                my $a = eval { $SigninTest::JSON->decode(join '', SigninTest::read_lines("$self->{dir}/answer")) }
                    // { status => 599 };    # an answer file half written: a status nothing expects
                $due{$s} = $a->{hang} ? [9**9**9, $a, $s] : [Time::HiRes::time() + ($a->{delay} // 0), $a, $s];
            }
            for my $k (keys %due) {
                my ($at, $a, $s) = @{ $due{$k} };
                next if Time::HiRes::time() < $at;
                my $body = $a->{body} // '';
                syswrite $s, "HTTP/1.1 $a->{status} X\r\nContent-Type: application/json\r\nContent-Length: "
                    . length($body) . "\r\nConnection: close\r\n\r\n$body";
                $sel->remove($s);
                delete $due{$k};
                delete $buf{$s};
                close $s;
            }
        }
    }
    sub stop {
        my ($self) = @_;
        return unless $self->{pid} && $self->{owner} == $$;
        kill 'TERM', $self->{pid};
        waitpid $self->{pid}, 0;
        delete $self->{pid};
    }
    sub DESTROY { $_[0]->stop }
}

sub conf {
    my ($t, %o) = @_;
    return $t->signin_http(
        extra => qq{
            signin_token_resend 0;
            signin_limits off;
            signin_passwords on;
            signin_registration_check /_app/may-register;
            @{[ $o{extra} // '' ]}
        },
        locations => qq{
            location = /_app/may-register {
                @{[ $o{open} ? '' : 'internal;' ]}
                proxy_read_timeout 1s;
                proxy_pass http://127.0.0.1:%%PORT3%%/may-register;
            }
            @{[ $o{locations} // '' ]}
        });
}

# Whether the store (LMDB's file, or the test's PostgreSQL schema) holds `needle` anywhere.
sub stored {
    my ($t, $needle) = @_;
    return index($t->stored_bytes, $needle) >= 0;
}

# ================================================================ nginx -t
{
    my $t = SigninTest->new;
    my ($rc, $out) = $t->nginx_t(http => conf($t, open => 1));
    isnt $rc, 0, 'nginx -t refuses a check location anyone can reach';
    like $out, qr/signin_registration_check location "\/_app\/may-register" is not "internal"/, '... and says why';
    (my $none = conf($t)) =~ s/location = \/_app\/may-register/location = \/_app\/elsewhere/;
    ($rc, $out) = $t->nginx_t(http => $none);
    like $out, qr/signin_registration_check "\/_app\/may-register" matches no exact or prefix location/,
        'nginx -t refuses a check no location serves';
    ($rc, $out) = $t->nginx_t(http => conf($t));
    is $rc, 0, 'nginx -t takes an internal location' or diag $out;
}

# ================================================================ the application's answers
{
    my $t = SigninTest->new;
    my $app = Application->new(port => $t->port3);
    $t->run(http => conf($t));

    # 2xx without a body: allowed, no roles
    my $r = $t->req(POST => '/auth/register', json => { email => 'Ann@Example.com' }, headers => { cookie => 'x=secret' });
    is $r->{status}, 202, 'a 2xx allows the registration';
    my @asked = $app->asked;
    is scalar(@asked), 1, 'the application was asked once';
    my $q = $SigninTest::JSON->decode($asked[0]{body});
    is_deeply $q, { email => 'ann@example.com', group => 'default', method => 'email', client => '127.0.0.1' },
        'it was asked {email, group, method, client}, the address normalized';
    is $asked[0]{line}, 'POST /may-register', '... by a POST';
    like $asked[0]{type} // '', qr{^application/json}, '... of JSON';
    ok !defined $asked[0]{cookie}, "... without the visitor's cookies";
    my $m = $t->last_email('ann@example.com');
    is $m && $m->{purpose}, 'Registration', 'the registration email was sent';
    $r = $t->req(POST => '/auth/token', json => { token => $m->{token} });
    is $r->{status}, 200, 'its token makes the account';
    my ($rc, $out) = $t->admin('user', 'ann@example.com');
    my $user = eval { $SigninTest::JSON->decode($out) } // {};
    is_deeply $user->{roles} // [], [], '... with no roles';

    # 2xx with roles
    $app->answer(status => 201, body => '{"roles":["editor","beta","editor"]}');
    $r = $t->req(POST => '/auth/register', json => { email => 'bea@example.com' });
    is $r->{status}, 202, 'a 2xx with roles allows';
    $m = $t->last_email('bea@example.com');
    $r = $t->req(POST => '/auth/token', json => { token => $m->{token} });
    is $r->{status}, 200, 'its token makes the account';
    ($rc, $out) = $t->admin('user', 'bea@example.com');
    $user = eval { $SigninTest::JSON->decode($out) } // {};
    is_deeply $user->{roles}, ['beta', 'editor'], '... with the roles the application gave (sorted, once)'
        or diag $out;

    # a 2xx whose body cannot be used: fails closed
    $app->answer(status => 200, body => '{"roles":"admin"}');
    $r = $t->req(POST => '/auth/register', json => { email => 'odd@example.com' });
    is $r->{status}, 503, 'a 2xx with roles that are no list fails closed';
    is $r->{json}{code}, 'registration_check_failed', '... registration_check_failed';

    # 403: refused, nothing sent, nothing stored
    $app->answer(status => 403);
    $r = $t->req(POST => '/auth/register', json => { email => 'refused@example.com' }, finished => 1);
    is $r->{status}, 403, 'a 403 refuses';
    is $r->{json}{code}, 'registration_refused', '... registration_refused';
    $r = $t->req(POST => '/auth/password/register',
        json => { email => 'refused-pw@example.com', password => 'violet tractor hums quietly' }, finished => 1);
    is $r->{status}, 403, 'a password registration is refused alike';
    is $r->{json}{code}, 'registration_refused', '... registration_refused';
    is $SigninTest::JSON->decode(($app->asked)[-1]{body})->{method}, 'password', '... and was asked with method "password"';

    # 500 and a hang: fail closed
    $app->answer(status => 500);
    $r = $t->req(POST => '/auth/register', json => { email => 'broken@example.com' }, finished => 1);
    is $r->{status}, 503, 'a 500 fails closed';
    is $r->{json}{code}, 'registration_check_failed', '... registration_check_failed';
    $app->answer(status => 200, hang => 1);
    my $t0 = time;
    $r = $t->req(POST => '/auth/register', json => { email => 'hung@example.com' }, finished => 1);
    my $waited = time - $t0;
    is $r->{status}, 503, 'a check that never answers fails closed';
    is $r->{json}{code}, 'registration_check_failed', '... registration_check_failed';
    cmp_ok $waited, '>', 0.9, sprintf '... once the location\'s proxy_read_timeout (1 s) is over (%.1f s)', $waited;
    cmp_ok $waited, '<', 5, '... and not much later';

    $app->answer(status => 200);
    $t->assert_nothing_sent(qr/^(refused|refused-pw|broken|hung|odd)\@example\.com$/,
        name => 'no email for a refused or failed check');
    ok stored($t, 'bea@example.com'), 'the store holds an allowed address (the control)';
    ok !stored($t, 'refused@example.com'), 'the store holds nothing of a refused address';
    ok !stored($t, 'refused-pw@example.com') && !stored($t, 'broken@example.com') && !stored($t, 'hung@example.com'),
        '... nor of a refused password registration or a failed check';

    # an address with an account is asked too, and refused alike: no account oracle
    $app->answer(status => 403);
    my $before = () = $app->asked;
    $r = $t->req(POST => '/auth/register', json => { email => 'ann@example.com' });
    is "$r->{status} $r->{content}", do {
        my $u = $t->req(POST => '/auth/register', json => { email => 'nobody-yet@example.com' });
        "$u->{status} $u->{content}";
    }, 'a refused address with an account gets the answer of one without';
    is scalar(() = $app->asked) - $before, 2, '... both were asked';

    # a sign-in is no registration
    $app->answer(status => 500);
    $before = () = $app->asked;
    $r = $t->req(POST => '/auth/login', json => { email => 'ann@example.com' });
    is $r->{status}, 202, 'a sign-in request does not ask the application';
    is scalar(() = $app->asked), $before, '... nothing was asked';
    $t->done;
}

# ================================================================ an administrator's invitation
# Asked too, with self-registration off (invitations are then the only way in): a refusal makes
# nothing and sends nothing; the roles the application gives join the administrator's.
SKIP: {
    skip 'no oathtool (build.sh installs Debian\'s oathtool)', 13 unless SigninTest::which('oathtool');
    my $t = SigninTest->new;
    my $app = Application->new(port => $t->port3);
    (my $closed = conf($t, extra => 'signin_mfa on; signin_admin on;')) =~ s/signin_registration on;/signin_registration off;/
        or die 'no signin_registration in the configuration';
    $t->run(http => $closed);
    $t->admin('invite', 'boss@example.com');
    $t->admin('role', 'add', 'boss@example.com', 'admin');
    my ($cookie) = $t->mfa_enrolled('boss@example.com', login => 1);
    my $asked = () = $app->asked;
    my $invite = sub {
        $t->req(POST => '/auth/admin/api/invitations', json => { @_, send => JSON::PP::true() },
            headers => { origin => $t->origin, cookie => $cookie }, finished => 1);
    };

    $app->answer(status => 403);
    my $r = $invite->(email => 'gil@example.com');
    is $r->{status}, 403, 'a refused invitation: 403';
    is $r->{json}{code}, 'registration_refused', '... registration_refused';
    my @asked = $app->asked;
    is scalar(@asked) - $asked, 1, '... the application was asked once';
    is_deeply [@{ $SigninTest::JSON->decode($asked[-1]{body}) }{qw(email method)}], ['gil@example.com', 'invitation'],
        '... about the address, with method "invitation"';
    my (undef, $out) = $t->admin('user', 'gil@example.com');
    like $out, qr/no such account/, '... no account was made';

    $app->answer(status => 500);
    $r = $invite->(email => 'gil@example.com');
    is "$r->{status} " . ($r->{json}{code} // ''), '503 registration_check_failed', 'a failed check: 503';
    $app->answer(status => 200);
    $t->assert_nothing_sent(qr/^gil\@example\.com$/, name => 'no invitation was sent to a refused address',
        control => { path => '/auth/admin/api/invitations', json => { send => JSON::PP::true() },
                     headers => { origin => $t->origin, cookie => $cookie } });
    ok !stored($t, 'gil@example.com'), '... and the store holds nothing of it';

    $app->answer(status => 200, body => '{"roles":["beta"]}');
    $r = $invite->(email => 'hal@example.com', roles => ['staff']);
    is $r->{status}, 202, 'an allowed invitation is sent' or diag $r->{content};
    my $m = $t->last_email('hal@example.com');
    is $m && $m->{purpose}, 'Invitation', '... the Invitation email';
    (undef, $out) = $t->admin('user', 'hal@example.com');
    my $user = eval { $SigninTest::JSON->decode($out) } // {};
    is_deeply $user->{roles}, ['beta', 'staff'], '... the account has the administrator\'s and the application\'s roles'
        or diag $out;
    is $SigninTest::JSON->decode(($app->asked)[-1]{body})->{method}, 'invitation', '... asked with method "invitation"';
    $t->done;
}

# ================================================================ a provider's first sign-in
SKIP: {
    my $why = SigninTest::missing_node_packages('oidc-provider', 'jose');
    skip $why, 11 if $why;
    my $t = SigninTest->new;
    my $app = Application->new(port => $t->port3);
    my ($dir, $origin, $port2) = ($t->prefix, $t->origin, $t->port2);
    open my $fh, '>', "$dir/idp.secret" or die; print $fh "idp-secret-value\n"; close $fh;
    my $idp = SigninTest::Provider->new(port => $port2, keys => "$dir/idp-keys.json", client_id => 'nginx',
        secret => 'idp-secret-value', redirect => ["$origin/auth/providers/idp/callback"], log => "$dir/idp.log");
    $t->run(http => conf($t,
        extra => "signin_provider idp issuer=http://127.0.0.1:$port2 client_id=nginx client_secret_file=$dir/idp.secret"
            . " trust_email=on;\n signin_provider_fetch /_signin/provider;",
        locations => q{
            location = /_signin/provider { internal; proxy_pass $signin_provider_url; subrequest_output_buffer_size 64k; }
        }));
    my $http = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 0);
    # start, the provider's redirects, the callback: the callback's answer
    my $flow = sub {
        my $start = $t->req(GET => '/auth/providers/idp/start');
        my ($cookie) = ($start->{headers}{'set-cookie'} // '') =~ /^(svc_dev_oidc=[^;]*)/;
        my $url = $start->{headers}{location} // die "start answered $start->{status}";
        for (1 .. 10) {
            last if index($url, "$origin/") == 0;
            $url = $http->get($url)->{headers}{location} // die 'the provider stopped redirecting';
            $url = $idp->issuer . $url if $url =~ m{^/};
        }
        my ($path) = $url =~ m{^\Q$origin\E(/.*)$};
        return $t->req(GET => $path, headers => { cookie => $cookie });
    };
    my $session_of = sub {
        my $sc = $_[0]{headers}{'set-cookie'} // [];
        my ($s) = grep { /^svc_dev_session=[^;]+/ } ref $sc ? @$sc : $sc;
        return $s ? ($s =~ /^([^;]+)/)[0] : undef;
    };

    $app->answer(status => 403);
    $idp->control(next => { sub => 'dan-sub', email => 'dan@example.com', email_verified => JSON::PP::true() });
    my $r = $flow->();
    is $r->{status}, 403, 'a refused provider sign-in that would make an account: 403';
    is $r->{json}{code}, 'registration_refused', '... registration_refused';
    my $q = $SigninTest::JSON->decode(($app->asked)[-1]{body});
    is_deeply [@$q{qw(email method)}], ['dan@example.com', 'provider'], '... asked with the address and method "provider"';
    my ($rc, $out) = $t->admin('user', 'dan@example.com');
    like $out, qr/no such account/, '... and no account was made';

    $app->answer(status => 500);
    $r = $flow->();
    is "$r->{status} " . ($r->{json}{code} // ''), '503 registration_check_failed', 'a failed check: 503';

    $app->answer(status => 200, body => '{"roles":["beta"]}');
    $r = $flow->();
    is $r->{status}, 302, 'an allowed one signs in';
    my $session = $session_of->($r);
    ok $session, '... with a session';
    ($rc, $out) = $t->admin('user', 'dan@example.com');
    my $user = eval { $SigninTest::JSON->decode($out) } // {};
    is_deeply $user->{roles}, ['beta'], '... into a new account with the roles the application gave' or diag $out;

    my $before = () = $app->asked;
    $app->answer(status => 403);
    $r = $flow->();
    is $r->{status}, 302, 'the next sign-in of that identity makes no account ...';
    ok $session_of->($r), '... signs in';
    is scalar(() = $app->asked), $before, '... and asks nothing';
    $idp->stop;
    $t->done;
}

# ================================================================ the check's time tells nothing
{
    my $t = SigninTest->new;
    my $app = Application->new(port => $t->port3);
    $t->run(http => conf($t));
    $t->sign_in('member@example.com');
    $app->answer(status => 200, delay => 0.03);
    sub median { my @s = sort { $a <=> $b } @_; return $s[$#s / 2] }
    my (@account, @unknown);
    for my $i (1 .. 40) {    # interleaved, so that the machine's drift falls on both alike
        for my $case ([\@account, 'member@example.com'], [\@unknown, "new$i\@example.com"]) {
            my $t0 = time;
            my $r = $t->req(POST => '/auth/register', json => { email => $case->[1] }, finished => 1);
            push @{ $case->[0] }, time - $t0;
            die "register answered $r->{status}: $r->{content}" unless $r->{status} == 202;
        }
    }
    my ($ma, $mu) = (median(@account) * 1000, median(@unknown) * 1000);
    diag sprintf 'a 30 ms check: median %.2f ms (account) vs %.2f ms (unknown)', $ma, $mu;
    cmp_ok $ma, '>=', 30, 'an address with an account waits for the check too';
    cmp_ok $mu, '>=', 30, '... as a new one does';
    cmp_ok abs($ma - $mu), '<', SigninTest::timing_tolerance_ms(5), 'the medians are alike';
    $t->done;
}

done_testing;
