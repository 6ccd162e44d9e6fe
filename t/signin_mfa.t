# Second factors over HTTP (issue #13). Every TOTP code here is made by Debian's
# oathtool from the secret the setup returned, never by the module's code: the current step and
# ±1 are accepted, ±2 refused, a step once accepted never again. Every way in (email token and
# code, password; cookie and bearer) stops at the factor; recovery codes are single use; five
# wrong codes end a pending sign-in; a remembered device skips the factor only for its user and
# browser and dies at a password change; signin_require mfa; $signin_mfa; a race of one code.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use POSIX ();

my $oathtool = SigninTest::which('oathtool');
plan skip_all => 'no oathtool (build.sh installs Debian\'s oathtool)' unless $oathtool;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_limits off; signin_mfa on; signin_passwords on; signin_site_name "Acme Tools";},
    locations => q{
location /app/ { signin_require on; proxy_set_header X-Mfa $signin_mfa; proxy_pass http://127.0.0.1:%%PORT%%/_echo/; }
location /strong/ { signin_require mfa; proxy_set_header X-Mfa $signin_mfa; proxy_pass http://127.0.0.1:%%PORT%%/_echo/; }
location /_echo/ { default_type text/plain; return 200 "mfa=$http_x_mfa\n"; }
}));
my $O = { origin => $t->origin };

sub code_at { SigninTest::totp_code(@_) }
sub settle { SigninTest::totp_settle() }
sub post { my ($path, $body, $cookie, %h) = @_; $t->req(POST => "/auth/$path", json => $body, headers => { %$O, ($cookie ? (cookie => $cookie) : ()), %h }) }
sub cookie_named { my ($r, $name) = @_; my @sc = ref $r->{headers}{'set-cookie'} ? @{ $r->{headers}{'set-cookie'} } : ($r->{headers}{'set-cookie'} // ()); for (@sc) { return $1 if /^(\Q$name\E=[^;]*)/ } return undef }

# ---- enrollment
my $alice = 'alice@example.com';
my $other = $t->sign_in($alice);
my $cookie = $t->sign_in($alice);
is $t->req(GET => '/auth/mfa')->{status}, 401, 'GET /mfa needs a session';
my $r = $t->req(GET => '/auth/mfa', headers => { cookie => $cookie });
is_deeply $r->{json}, { totp => JSON::PP::false, recovery_codes_left => 0, remembered_devices => 0 }, 'GET /mfa: nothing yet';

$r = post('mfa/totp/setup', {}, $cookie);
is $r->{status}, 200, 'setup from a fresh session';
my $secret = $r->{json}{secret} // '';
like $secret, qr/^[A-Z2-7]{32}$/, '... the secret in base32';
like $r->{json}{otpauth_uri}, qr{^otpauth://totp/Acme%20Tools%3Aalice%40example\.com\?secret=\Q$secret\E&issuer=Acme%20Tools&algorithm=SHA1&digits=6&period=30$},
    '... the otpauth URI, issuer = signin_site_name';
like $r->{json}{qr_svg}, qr{^<svg xmlns="http://www\.w3\.org/2000/svg"}, '... and a QR code in SVG';
like $r->{headers}{'cache-control'}, qr/no-store/, '... not stored by caches';
is post('mfa/totp/confirm', { code => '000000' eq code_at($secret) ? '111111' : '000000' }, $cookie)->{status}, 401,
    'confirm with a wrong code: 401';
settle();
$r = post('mfa/totp/confirm', { code => code_at($secret, -30) }, $cookie);
is $r->{status}, 200, 'confirm with the code of one step back (oathtool): accepted';
my @recovery = @{ $r->{json}{recovery_codes} || [] };
is scalar @recovery, 10, '... 10 recovery codes';
like $recovery[0], qr/^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/, '... XXXX-XXXX-XXXX-XXXX';
is $t->req(GET => '/auth/me', headers => { cookie => $other })->{status}, 401, '... and every other session ended';
$r = $t->req(GET => '/app/', headers => { cookie => $cookie });
is $r->{content}, "mfa=1\n", 'the enrolling session counts as two factors ($signin_mfa)';
$r = $t->req(GET => '/auth/mfa', headers => { cookie => $cookie });
is_deeply $r->{json}, { totp => JSON::PP::true, recovery_codes_left => 10, remembered_devices => 0 }, 'GET /mfa: on';

# ---- every way in stops at the factor
sub pending_ok {
    my ($r, $what) = @_;
    is $r->{status}, 202, "$what: 202";
    ok $r->{json}{mfa_required}, '... mfa_required';
    like $r->{json}{mfa_token} // '', qr/^[A-Za-z0-9_-]{43}$/, '... an mfa_token';
    is_deeply $r->{json}{methods}, ['totp', 'recovery_code'], '... the methods';
    is $r->{json}{expires_in}, 300, '... for 5 minutes';
    ok !$r->{headers}{'set-cookie'}, '... and no cookie';
    ok !exists $r->{json}{access_token}, '... and no bearer token';
    return $r->{json}{mfa_token};
}
my $mfa_token = pending_ok(post('session', { token => $t->request_token($alice) }), 'POST /session (token)');
my $m = $t->last_email($alice);
$t->request_token($alice);
$m = $t->last_email($alice);
pending_ok(post('session', { email => $alice, code => $m->{code} }), 'POST /session (email and code)');
pending_ok(post('token', { token => $t->request_token($alice) }), 'POST /token');
my $email_session_count = () = $t->req(GET => '/auth/sessions', headers => { cookie => $cookie })->{json}{sessions}->@*;
is $email_session_count, 1, 'no session was made by those';

# ---- the second step: ±1, ±2, replay
settle();
my $ahead2 = code_at($secret, 60);
is post('mfa/verify', { mfa_token => $mfa_token, code => $ahead2 })->{status}, 401, 'a code two steps ahead: refused';
my $ahead1 = code_at($secret, 30);
$r = post('mfa/verify', { mfa_token => $mfa_token, code => $ahead1 });
is $r->{status}, 200, 'a code one step ahead: signed in';
is $r->{json}{email}, $alice, '... as the user';
my $strong = SigninTest::set_cookie_pair($r);
ok $strong, '... with a session cookie';
is $t->req(GET => '/strong/', headers => { cookie => $strong })->{content}, "mfa=1\n", 'signin_require mfa lets it in';
is post('mfa/verify', { mfa_token => $mfa_token, code => $ahead1 })->{status}, 401, 'the mfa_token is spent';
my $again = pending_ok(post('session', { token => $t->request_token($alice) }), 'a new sign-in');
$r = post('mfa/verify', { mfa_token => $again, code => $ahead1 });
is $r->{status}, 401, 'the same code for another sign-in: refused (a step is accepted once)';
is $r->{json}{code}, 'invalid_code', '... invalid_code';
is post('mfa/verify', { mfa_token => $again, code => code_at($secret, -30) })->{status}, 401,
    'an older step than the last accepted: refused';

# ---- recovery codes
$r = post('mfa/verify', { mfa_token => $again, recovery_code => lc $recovery[0] });
is $r->{status}, 200, 'a recovery code (any case) signs in';
my $by_recovery = SigninTest::set_cookie_pair($r);
my $third = pending_ok(post('session', { token => $t->request_token($alice) }), 'another sign-in');
is post('mfa/verify', { mfa_token => $third, recovery_code => $recovery[0] })->{status}, 401, 'a recovery code works once';
is $t->req(GET => '/auth/mfa', headers => { cookie => $by_recovery })->{json}{recovery_codes_left}, 9, 'GET /mfa counts what is left';
is post('mfa/verify', { mfa_token => $third, code => '123456', recovery_code => $recovery[1] })->{status}, 400,
    'a code and a recovery code at once: 400';

# ---- five wrong codes end the pending sign-in
my $doomed = pending_ok(post('session', { token => $t->request_token($alice) }), 'a sign-in to lock');
for my $i (1 .. 5) {
    post('mfa/verify', { mfa_token => $doomed, recovery_code => 'AAAA-AAAA-AAAA-AAAA' });
}
$r = post('mfa/verify', { mfa_token => $doomed, recovery_code => $recovery[2] });
is $r->{status}, 401, 'after five wrong codes the right one is refused';
is $r->{json}{code}, 'invalid_token', '... the sign-in is over';

# ---- bearer: /mfa/token
my $bt = pending_ok(post('token', { token => $t->request_token($alice) }), 'POST /token');
$r = post('mfa/token', { mfa_token => $bt, recovery_code => $recovery[3] });
is $r->{status}, 200, '/mfa/token finishes it';
is $r->{json}{token_type}, 'Bearer', '... with a bearer token';
is $t->req(GET => '/strong/', headers => { authorization => "Bearer $r->{json}{access_token}" })->{content}, "mfa=1\n",
    '... that passes signin_require mfa';

# ---- passwords stop at the factor too
$r = post('password', { password => 'a long enough password 1' }, $strong);
is $r->{status}, 204, 'a password is set (fresh session)';
pending_ok(post('password/session', { email => $alice, password => 'a long enough password 1' }), 'POST /password/session');
pending_ok(post('password/token', { email => $alice, password => 'a long enough password 1' }), 'POST /password/token');

# ---- remembered devices
settle();
my $pt = pending_ok(post('session', { token => $t->request_token($alice) }), 'a sign-in to remember');
$r = post('mfa/verify', { mfa_token => $pt, recovery_code => $recovery[4], remember => JSON::PP::true });
is $r->{status}, 200, 'verify with remember: true';
my $device = cookie_named($r, 'svc_dev_device');
ok $device, '... sets the device cookie';
my ($device_line) = grep { /^svc_dev_device=/ } (ref $r->{headers}{'set-cookie'} ? @{ $r->{headers}{'set-cookie'} } : ($r->{headers}{'set-cookie'}));
like $device_line, qr/; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=2592000$/, '... HttpOnly, Secure, SameSite=Lax, 30 days';
$r = post('session', { token => $t->request_token($alice) }, $device);
is $r->{status}, 200, 'the remembered browser signs in with email alone';
my $remembered = SigninTest::set_cookie_pair($r);
is $t->req(GET => '/app/', headers => { cookie => $remembered })->{content}, "mfa=1\n", '... as two factors';
my $bob = 'bob@example.com';
my $bob_cookie = $t->sign_in($bob);
is $t->req(GET => '/strong/', headers => { cookie => $bob_cookie })->{status}, 403, 'signin_require mfa refuses a one-factor session';
is $t->req(GET => '/strong/', headers => { cookie => $bob_cookie })->{json}{code}, 'mfa_required', '... mfa_required';
is $t->req(GET => '/app/', headers => { cookie => $bob_cookie })->{content}, "mfa=0\n", '$signin_mfa is 0 for it';
$r = post('mfa/totp/setup', {}, $bob_cookie);
my $bob_secret = $r->{json}{secret};
settle();
is post('mfa/totp/confirm', { code => code_at($bob_secret) }, $bob_cookie)->{status}, 200, 'bob enrolls too';
pending_ok(post('session', { token => $t->request_token($bob) }, $device), "alice's device for bob");
is $t->req(GET => '/auth/mfa', headers => { cookie => $remembered })->{json}{remembered_devices}, 1, 'GET /mfa counts the device';
$r = post('password/change', { current => 'a long enough password 1', password => 'another long password 2' }, $remembered);
is $r->{status}, 204, 'a password change';
ok $t->last_email($alice, purpose => 'PasswordChanged'), '... and its notice';
pending_ok(post('session', { token => $t->request_token($alice) }, $device), 'after it the device is forgotten');

# ---- a race: one code, many connections, one session
my $race = pending_ok(post('session', { token => $t->request_token($alice) }), 'a sign-in to race for');
my $code = $recovery[5];
my @kids;
for my $i (1 .. 6) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $rr = post('mfa/verify', { mfa_token => $race, recovery_code => $code });
        POSIX::_exit($rr->{status} == 200 ? 0 : 1);
    }
    push @kids, $pid;
}
my $wins = 0;
for (@kids) { waitpid $_, 0; $wins++ if $? == 0 }
is $wins, 1, 'six concurrent /mfa/verify with one code: one session';

# ---- disable and forget
my $fresh = pending_ok(post('session', { token => $t->request_token($alice) }), 'a fresh sign-in');
$r = post('mfa/verify', { mfa_token => $fresh, recovery_code => $recovery[6] });
my $fresh_cookie = SigninTest::set_cookie_pair($r);
is post('mfa/disable', {}, $fresh_cookie)->{status}, 400, 'disable needs a code or a recovery code';
is post('mfa/disable', { recovery_code => 'AAAA-AAAA-AAAA-AAAA' }, $fresh_cookie)->{status}, 401, '... a right one';
$r = post('mfa/disable', { recovery_code => $recovery[7] }, $fresh_cookie);
is $r->{status}, 204, 'disable with a recovery code';
$r = post('session', { token => $t->request_token($alice) });
is $r->{status}, 200, 'then email alone signs in again';
is $t->req(GET => '/auth/mfa', headers => { cookie => $fresh_cookie })->{json}{totp}, JSON::PP::false, 'GET /mfa: off';
is post('mfa/devices/forget', {}, $bob_cookie)->{status}, 204, 'forget devices: 204';

# ---- fresh session rules
my $pw = post('password/session', { email => $alice, password => 'another long password 2' });
is $pw->{status}, 200, 'a password session (not fresh)';
my $stale = SigninTest::set_cookie_pair($pw);
$r = post('mfa/totp/setup', {}, $stale);
is $r->{status}, 403, 'setup from a password session: 403';
is $r->{json}{code}, 'fresh_session_required', '... fresh_session_required';

# ---- an operator resets a lost phone's factor
pending_ok(post('session', { token => $t->request_token($bob) }), 'bob, before the reset');
my ($reset_rc, $reset_out) = $t->admin('mfa', 'reset', $bob);
is $reset_rc, 0, 'signin-admin mfa reset' or diag $reset_out;
like $reset_out, qr/second factor reset/, '... says so';
is $t->req(GET => '/auth/me', headers => { cookie => $bob_cookie })->{status}, 401, '... and ended the sessions';
is post('session', { token => $t->request_token($bob) })->{status}, 200, 'then email alone signs bob in';
is(($t->admin('mfa', 'reset'))[0], 2, 'mfa reset without an address: usage, status 2');
is(($t->admin('mfa', 'reset', 'nobody@example.com'))[0], 1, '... an unknown address: status 1');

# ---- the audit trail, and no secret in it or in the log
my ($rc, $audit) = $t->admin('audit', 200);
for my $kind (qw(mfa.setup mfa.enabled mfa.required mfa.verified mfa.failed mfa.recovery_used mfa.device_remembered mfa.devices_forgotten mfa.locked mfa.disabled mfa.reset)) {
    like $audit, qr/\b\Q$kind\E\b/, "audited: $kind";
}
unlike $audit . $t->error_log, qr/\Q$secret\E|\Q$recovery[8]\E/, 'no secret and no recovery code in the audit trail or the log';
$t->done;

# ---- signin_mfa off
my $off = SigninTest->new;
$off->run(http => $off->signin_http(extra => q{signin_limits off;}));
my $oc = $off->sign_in('x@example.com');
$r = $off->req(GET => '/auth/mfa', headers => { cookie => $oc });
is $r->{status}, 403, 'signin_mfa off: /mfa answers 403';
is $r->{json}{code}, 'mfa_disabled', '... mfa_disabled';
$off->done;
done_testing;
