# What needs the signin-admin tool: a suspended account (a token is spent even if the
# exchange then fails) and the audit trail (address and client of requests are recorded;
# signin_client takes any nginx value).
use strict; use warnings;
use Test::More;
use JSON::PP;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
plan skip_all => 'signin-admin is not built' unless $ENV{SIGNIN_ADMIN} && -x $ENV{SIGNIN_ADMIN};
$t->run(http => $t->signin_http(extra => 'signin_client $http_x_test_client;'));
my $O = $t->origin;

sub session {
    my ($tok, %h) = @_;
    return $t->req(POST => '/auth/session', json => { token => $tok }, headers => { origin => $O, %h });
}
sub audit {
    my ($rc, $out) = $t->admin('audit', 200);
    is $rc, 0, 'signin-admin audit runs' or diag $out;
    return map { my $e = eval { decode_json($_) }; $e ? ($e) : () } grep { /\S/ } split /\n/, $out;
}

# ---------------------------------------------------------------- a token is spent even if the exchange fails
{
    my $e = 'suspended@example.com';
    my $r = session($t->request_token($e));
    is $r->{status}, 200, 'account created';
    my $cookie = SigninTest::set_cookie_pair($r);
    my $tok = $t->request_token($e, login => 1);
    # each worker that answers holds the decoded session afterwards (the store's memo of it): the
    # suspension must still be seen at the next request, whichever worker takes it
    my @before = map { $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{status} } 1 .. 8;
    is_deeply \@before, [(200) x 8], 'signed in';
    my ($rc, $out) = $t->admin('suspend', $e);
    is $rc, 0, 'signin-admin suspend' or diag $out;
    $r = $t->req(GET => '/auth/me', headers => { cookie => $cookie });
    is $r->{status}, 401, 'a suspended account\'s session stops working' or diag $r->{content};
    $r = session($tok);
    is $r->{status}, 403, 'exchange for a suspended account: 403' or diag $r->{content};
    is(($r->{json} || {})->{code}, 'account_suspended', 'code account_suspended');
    ok !$r->{headers}{'set-cookie'}, 'and no cookie';
    ($rc, $out) = $t->admin('restore', $e);
    is $rc, 0, 'signin-admin restore' or diag $out;
    $r = session($tok);
    is $r->{status}, 401, 'after the restore the same token is spent: 401' or diag $r->{content};
    is(($r->{json} || {})->{code}, 'invalid_token', 'code invalid_token');
    $r = $t->req(POST => '/auth/token', json => { token => $tok });
    is $r->{status}, 401, 'and /token refuses it too';
    $r = session($t->request_token($e, login => 1));
    is $r->{status}, 200, 'a new token signs the restored account in' or diag $r->{content};
}

# ---------------------------------------------------------------- the audit trail records address and client
{
    my $e = 'audited@example.com';
    my $r = $t->req(POST => '/auth/register', json => { email => $e }, headers => { 'x-test-client' => 'client-register-1' });
    is $r->{status}, 202, 'register';
    my $m = $t->last_email($e);
    $r = session($m->{token}, 'x-test-client' => 'client-exchange-2');
    is $r->{status}, 200, 'exchange';
    my $cookie = SigninTest::set_cookie_pair($r);
    $r = $t->req(POST => '/auth/login', json => { email => 'nobody-here@example.com' }, headers => { 'x-test-client' => 'client-unknown-3' });
    is $r->{status}, 202, 'login for an unknown address';
    $r = session('Z' x 43, 'x-test-client' => 'client-guess-4');
    is $r->{status}, 401, 'a wrong token';
    $r = $t->req(GET => '/auth/sessions', headers => { cookie => $cookie, 'x-test-client' => 'client-list-5' });
    my ($cur) = grep { $_->{current} } @{ ($r->{json} || {})->{sessions} || [] };
    is $cur && $cur->{client}, 'client-exchange-2', 'the session records the signin_client value of the exchange';
    $r = $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, origin => $t->origin, 'x-test-client' => 'client-logout-6' });
    is $r->{status}, 204, 'logout';

    my @a = audit();
    ok scalar(@a) > 0, 'the audit trail has entries';
    for my $e (@a) { like $e->{at} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, 'audit time is RFC 3339'; last }
    ok((grep { ($_->{email} // '') eq $e && ($_->{client} // '') eq 'client-register-1' } @a), 'the registration request is recorded with its address and client')
        or diag explain \@a;
    ok((grep { ($_->{email} // '') eq $e && ($_->{client} // '') eq 'client-exchange-2' } @a), 'the exchange is recorded with its address and client');
    ok((grep { ($_->{email} // '') eq 'nobody-here@example.com' && ($_->{client} // '') eq 'client-unknown-3' } @a), 'a login for an unknown address is recorded with address and client');
    ok((grep { ($_->{client} // '') eq 'client-guess-4' } @a), 'a failed exchange is recorded with its client');
    ok((grep { ($_->{email} // '') eq $e && ($_->{client} // '') eq 'client-logout-6' } @a), 'the logout is recorded with its address and client');
    ok((grep { ($_->{email} // '') eq 'suspended@example.com' && ($_->{kind} // '') =~ /suspend/ } @a), 'the suspension is recorded');
    my ($rc, $all) = $t->admin('audit', 200);
    unlike $all, qr/\Q$m->{token}\E/, 'the audit trail holds no token';
    (my $cookie_secret = $cookie) =~ s/^[^=]*=//;
    ok index($all, $cookie_secret) < 0, 'nor a session secret';
    ($rc, my $u) = $t->admin('user', $e);
    is $rc, 0, 'signin-admin user finds the account';
    unlike $u, qr/\Q$m->{token}\E/, 'and prints no token';
}

# ---------------------------------------------------------------- the account exists only after the exchange
{
    my $e = 'pending@example.com';
    my $tok = $t->request_token($e);
    my ($rc, $out) = $t->admin('user', $e);
    isnt $rc, 0, 'before the exchange there is no account' or diag $out;
    is session($tok)->{status}, 200, 'exchange';
    ($rc, $out) = $t->admin('user', $e);
    is $rc, 0, 'after the exchange the account exists' or diag $out;
    like $out, qr/\Q$e\E/, 'with the address';
}

# ---------------------------------------------------------------- the command line (issue #22)
{
    my $admin = $t->{admin};
    my $missing = $t->prefix . '/no-such-store';
    my $out = `'$admin' --store '$missing' stats 2>&1`;
    is $? >> 8, 1, 'a mistyped --store is an error';
    like $out, qr/no store at \Q$missing\E \(give --create to make one\)/, '... saying so';
    ok !-e "$missing/data.mdb", '... and makes nothing';
    $out = `'$admin' stats --store '$missing' --create --json 2>&1`;
    is $? >> 8, 0, '--create makes one (options anywhere on the line)';
    like $out, qr/"users":0/, '... and reports on it';
    my ($rc) = $t->admin('audit', 'abc');
    is $rc, 2, 'audit abc: a usage error (exit 2), not a crash';
    ($rc, $out) = $t->admin('stats');
    is $rc, 0, 'stats';
}

# ---------------------------------------------------------------- users, sessions, revoke (issue #22)
{
    my $cookie = $t->sign_in('listed@example.com');
    my $other = $t->sign_in('listed@example.com');
    my ($rc, $out) = $t->admin('users');
    is $rc, 0, 'users';
    my @users = map { $SigninTest::JSON->decode($_) } grep { /\S/ } split /\n/, $out;
    ok((grep { $_->{user}{email} eq 'listed@example.com' } @users), '... lists every account, one JSON line each');
    ($rc, $out) = $t->admin('users', '--email', 'listed@');
    @users = map { $SigninTest::JSON->decode($_) } grep { /\S/ } split /\n/, $out;
    is_deeply [map { $_->{user}{email} } @users], ['listed@example.com'], 'users --email filters by address';
    ($rc, $out) = $t->admin('sessions', 'listed@example.com');
    my @sessions = map { $SigninTest::JSON->decode($_) } grep { /\S/ } split /\n/, $out;
    is scalar(@sessions), 2, 'sessions lists the account\'s two sessions';
    my $me = $t->req(GET => '/auth/sessions', headers => { cookie => $cookie })->{json}{sessions};
    my ($current) = grep { $_->{current} } @$me;
    ($rc, $out) = $t->admin('revoke', $current->{id});
    is $rc, 0, 'revoke SESSION_ID' or diag $out;
    is $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{status}, 401, 'that session no longer works';
    is $t->req(GET => '/auth/me', headers => { cookie => $other })->{status}, 200, 'the other still does';
    ($rc) = $t->admin('revoke', $current->{id});
    is $rc, 1, 'revoking it again: not found';
    (undef, $out) = $t->admin('audit', 5);
    like $out, qr/session\.revoked.*listed\@example\.com|listed\@example\.com.*session\.revoked/, 'audited with the address';
    ($rc, $out) = $t->admin('audit', '--email', 'Listed@Example.com', '--kind', 'session.created', '1');
    my @lines = grep { /\S/ } split /\n/, $out;
    is scalar(@lines), 1, 'audit N --email --kind: at most N entries';
    my $e = $SigninTest::JSON->decode($lines[0] // '{}');
    is_deeply [$e->{email}, $e->{kind}], ['listed@example.com', 'session.created'], '... that match both';
    ($rc, $out) = $t->admin('audit', '--kind', 'session.created', '--email', 'listed@example.com');
    is scalar(grep { /\S/ } split /\n/, $out), 2, '... all of them (two sign-ins) within the default 20';
    ($rc) = $t->admin('audit', '--bogus');
    is $rc, 2, 'an unknown option: usage error';
    ($rc, $out) = $t->admin('role', 'add', 'listed@example.com', 'ops', '--group', 'default');
    is $rc, 0, 'role add EMAIL ROLE --group G' or diag $out;
    (undef, $out) = $t->admin('--group', 'default', 'user', 'listed@example.com');
    like $out, qr/"roles":\["ops"\]/, '... the role is held (and --group before the command reads it too)';
    (undef, $out) = $t->admin('users', '--group', 'nosuch');
    is $out, '', 'users --group lists only that group';
    # api_versions_pin signin's pins (t/versions_pin.t serves requests with them)
    ($rc, $out) = $t->admin_text('api-version', 'listed@example.com');
    is_deeply [$rc, $out], [0, "-\n"], 'api-version EMAIL: no pin yet';
    ($rc, $out) = $t->admin_text('api-version', 'listed@example.com', '2024-06-01');
    is $rc, 0, 'api-version EMAIL NAME sets it' or diag $out;
    (undef, $out) = $t->admin('api-version', 'listed@example.com');
    like $out, qr/"api_version":"2024-06-01"/, '... --json shows it';
    (undef, $out) = $t->admin_text('user', 'listed@example.com');
    like $out, qr/^api version\s+2024-06-01$/m, '... and so does user';
    (undef, $out) = $t->admin('audit', '--kind', 'user.api_version', '1');
    like $out, qr/"detail":"2024-06-01"/, '... audited';
    ($rc, $out) = $t->admin_text('api-version', 'listed@example.com', '-');
    is $rc, 0, 'api-version EMAIL - clears it';
    (undef, $out) = $t->admin('api-version', 'listed@example.com');
    like $out, qr/"api_version":null/, '... none';
    ($rc, $out) = $t->admin_text('api-version', 'listed@example.com', 'a/b');
    is $rc, 1, 'a name a version cannot have is refused' or diag $out;
    ($rc) = $t->admin_text('api-version', 'nobody@example.com');
    is $rc, 1, 'an unknown account: not found';
}

# ---------------------------------------------------------------- tables, backup, check, the rest (issue #22)
{
    my ($rc, $out) = $t->admin_text('users');
    is $rc, 0, 'users without --json';
    like $out, qr/^EMAIL\s+GROUP\s+STATE\s+ROLES\s+CREATED\s+ID$/m, '... a table with a header';
    like $out, qr/^listed\@example\.com\s+default\s+active\s+ops\s/m, '... a row per account';
    ($rc, $out) = $t->admin_text('stats');
    like $out, qr/^users\s+\d+$/m, 'stats: users';
    like $out, qr/^store used\s+\d+ of \d+ bytes \(\d+\.\d%\)$/m, '... and how full the store is';
    ($rc, $out) = $t->admin('stats');
    my $s = decode_json($out);
    ok $s->{users} >= 3 && $s->{sessions} >= 1 && $s->{map_bytes} > $s->{used_bytes} && defined $s->{used_percent},
        'stats --json: users, sessions, map and use' or diag $out;
    ($rc, $out) = $t->admin('user', 'listed@example.com');
    my $id = decode_json($out)->{user}{id};
    ($rc, $out) = $t->admin('user', $id);
    is $rc, 0, 'user ID finds the account by its id';
    like $out, qr/listed\@example\.com/, '... the same account';
    ($rc, $out) = $t->admin_text('user', 'listed@example.com');
    like $out, qr/^state\s+active$/m, 'user without --json: its fields';

    my $a = $t->sign_in('many@example.com');
    my $b = $t->sign_in('many@example.com');
    ($rc, $out) = $t->admin('revoke', '--user', 'many@example.com');
    is $rc, 0, 'revoke --user EMAIL';
    like $out, qr/2 sessions revoked/, '... ends every session of the account';
    is $t->req(GET => '/auth/me', headers => { cookie => $_ })->{status}, 401, '... that session no longer works' for $a, $b;
    ($rc) = $t->admin('revoke');
    is $rc, 2, 'revoke with neither: a usage error';

    ($rc, $out) = $t->admin('suspend', 'many@example.com');
    ($rc, $out) = $t->admin('unsuspend', 'many@example.com');
    is $rc, 0, 'unsuspend';
    like $out, qr/restored/, '... lifts it';

    ($rc, $out) = $t->admin('audit', '--since', '1h', '--kind', 'session.revoked');
    ok scalar(grep { /\S/ } split /\n/, $out) >= 2, 'audit --since 1h finds the recent entries';
    ($rc, $out) = $t->admin('audit', '--until', '2000-01-01');
    is $out, '', 'audit --until 2000-01-01 finds none';
    ($rc, $out) = $t->admin('audit', '--since', 'yesterday-ish');
    is $rc, 2, 'a --since that is not a time: a usage error (exit 2)';
    like $out, qr/not a time: yesterday-ish/, '... naming the word';
    ($rc, $out) = $t->admin('audit', '--since', 'not-a-time');
    is $rc, 2, 'audit --since not-a-time: exit 2';
    ($rc, $out) = $t->admin('audit', '--until', '2026-13-45');
    is $rc, 2, 'audit --until 2026-13-45: exit 2';
    ($rc, $out) = $t->admin('audit', '--since', '99999999999999999999d');
    is $rc, 2, 'audit --since with a count too large for any time: exit 2, not an exception';
    ($rc, $out) = $t->admin('frobnicate');
    is $rc, 2, 'an unknown command: a usage error (exit 2)';
    like $out, qr/unknown command "frobnicate"/, '... naming the word' or diag $out;
    unlike $out, qr/A subcommand is required/, '... rather than asking for a command' or diag $out;
    $out = `'$t->{admin}' frobnicate 2>&1`;
    is $? >> 8, 2, 'signin-admin frobnicate (no --store either): exit 2';
    like $out, qr/unknown command "frobnicate"/, '... naming the word' or diag $out;
    $out = `'$t->{admin}' --store '${\ $t->store}' 2>&1`;
    is $? >> 8, 2, 'no command at all: exit 2';
    like $out, qr/A subcommand is required/, '... asking for one' or diag $out;
    ($rc, $out) = $t->admin_text('passkeys', 'listed@example.com');
    is $rc, 0, 'passkeys EMAIL';
    like $out, qr/\(none\)/, '... none for this account';

    # a consistent copy while nginx serves and writes
    my $pid = fork // die;
    if (!$pid) { for (1 .. 30) { $t->sign_in("load$_\@example.com") } exit 0 }
    my $file = $t->prefix . '/backup.mdb';
    ($rc, $out) = $t->admin('backup', $file);
    waitpid $pid, 0;
    is $rc, 0, 'backup FILE while nginx serves' or diag $out;
    ok -s $file, '... writes the file';
    is((stat $file)[2] & 0777, 0600, '... readable by its owner only');
    ($rc) = $t->admin('backup', $file);
    is $rc, 1, '... and never over an existing file';
    my $restored = $t->prefix . '/restored';
    mkdir $restored or die;
    system('cp', $file, "$restored/data.mdb") == 0 or die;
    $out = `'$t->{admin}' --store '$restored' --json user listed\@example.com 2>&1`;
    like $out, qr/listed\@example\.com/, '... a store made from it has the accounts';
    ($rc, $out) = $t->admin_text('check');
    is $rc, 0, 'check: the live store is sound' or diag $out;
    like $out, qr/the store is sound/, '... and says so';

    SKIP: {
        skip 'the owner check needs root (to run as another user)', 2 unless $> == 0 && SigninTest::which('runuser');
        my $owner = getpwuid((stat $t->store)[4]);
        skip 'the store belongs to root here', 2 if $owner eq 'root';
        my $other = $owner eq 'daemon' ? 'nobody' : 'daemon';
        my $mode = (stat $t->prefix)[2] & 07777;
        chmod 0711, $t->prefix;  # the other user may reach the store's directory (not read it)
        $out = `runuser -u $other -- '$t->{admin}' --store '${\ $t->store}' stats 2>&1`;
        chmod $mode, $t->prefix;
        isnt $? >> 8, 0, 'another user than the store\'s owner is refused';
        like $out, qr/belongs to \Q$owner\E .*sudo -u \Q$owner\E/, '... naming the user to run as' or diag $out;
    }
}

$t->done;
done_testing;
