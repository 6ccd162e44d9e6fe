# Password registration, sign-in (cookie and bearer), the policy over HTTP, NFC, the PHC string
# checked by Debian's python3-argon2, existing accounts, POST /password and /password/change.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Digest::SHA qw(sha256);
use Time::HiRes qw(time);

my $GOOD  = 'violet tractor hums quietly';
my $GOOD2 = 'seven orange kettles whistle';
my $t = SigninTest->new;

# a breached-password list: sorted raw SHA-256 digests (the README's command makes the same)
my $list = $t->prefix . '/breached.bin';
open my $fh, '>:raw', $list or die;
print $fh join '', sort map { sha256($_) } ('lantern mossy canyon drift', map { "breached-$_" } 1 .. 200);
close $fh;

$t->run(main => 'thread_pool default threads=2;', http => $t->password_http(qq{
    signin_password_blocklist $list;
    signin_password_register_backoff 100ms;
    signin_password_register_backoff_max 200ms;
    signin_password_fresh 1s;
}));
my $O = { origin => $t->origin };

# ---------------------------------------------------------------- policy (400, message)
my %weak = (
    'short one here'                 => qr/at least 15 characters; this password has 14/,
    'Password12345678'               => qr/common word/,
    'qwertyuiopasdfgh'               => qr/keyboard/,
    'abcdeabcdeabcdeabcde'           => qr/repeats/,
    'aaaaaaaabbbbbbbbcccc'           => qr/only 3 different characters/,
    'lantern mossy canyon drift'     => qr/data breach/,
    ('x7#Kq' x 205)                  => qr/at most 1024 bytes/,
    'uncharacteristically'           => qr/common passwords/,
);
for my $p (sort keys %weak) {
    my $r = $t->req(POST => '/auth/password/register', json => { email => 'weak@example.com', password => $p },
        finished => 1);
    is $r->{status}, 400, "weak password refused: " . substr($p, 0, 24);
    is $r->{json}{code}, 'weak_password', '... code weak_password';
    like $r->{json}{error}, $weak{$p}, '... with a message a person can act on';
}
$t->assert_nothing_sent('weak@example.com', name => 'no email for a refused password',
    control => { path => '/auth/password/register', json => { password => $GOOD } });
my $r = $t->password_req(register => 'not-an-address', $GOOD);
is $r->{status}, 400, 'invalid email 400';
$r = $t->req(POST => '/auth/password/register', json => { email => 'a@example.com' });
is $r->{status}, 400, 'missing password 400';
$r = $t->req(POST => '/auth/password/register', body => '{"email":"a@example.com","password":"x"}');
is $r->{status}, 415, 'non-JSON content type 415';

# ---------------------------------------------------------------- registration → pending → account
# the password as raw UTF-8 bytes inside a JSON text
sub pw_raw {
    my ($what, $email, $password_utf8, %h) = @_;
    my $body = '{"email":"' . $email . '","password":"' . $password_utf8 . '"}';
    return $t->req(POST => "/auth/password/$what", body => $body,
        headers => { 'content-type' => 'application/json', %h });
}
my $nfc = "caf\xc3\xa9 $GOOD";          # é composed (U+00E9)
my $nfd = "cafe\xcc\x81 $GOOD";         # e + U+0301
$r = pw_raw(register => 'alice@example.com', $nfd);
my $alice_registered = time;
is $r->{status}, 202, 'password register 202' or diag $r->{content};
is_deeply $r->{json}, { status => 'sent' }, '... the same body as /register';
my $m = $t->last_email('alice@example.com');
is $m->{purpose}, 'Registration', 'a Registration token is emailed';
my ($rc, $out) = $t->admin('user', 'alice@example.com');
isnt $rc, 0, 'no account before the token is exchanged';
$r = pw_raw(session => 'alice@example.com', $nfc, %$O);
is $r->{status}, 401, 'no password sign-in while pending';
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => $O);
is $r->{status}, 200, 'the token creates the account' or diag $r->{content};
($rc, $out) = $t->admin('user', 'alice@example.com');
like $out, qr/"has_password":true/, 'the account has the registered password';

# ---------------------------------------------------------------- the stored hash
my $phc = $t->password_hash('alice@example.com');
like $phc, qr/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+\/]{22}\$[A-Za-z0-9+\/]{43}$/,
    'PHC string: Argon2id, 19 MiB, 2 iterations, 16-byte salt';
# the cross-check by another Argon2 implementation needs python3-argon2 (optional)
my $PY_ARGON2 = SigninTest::python_with('argon2');
sub py_verify {
    my ($hash, $password) = @_;
    my $pid = open my $py, '-|', $PY_ARGON2, '-c', <<'PY', $hash, $password;
import sys, argon2
try:
    argon2.PasswordHasher().verify(sys.argv[1], sys.argv[2].encode('utf-8', 'surrogateescape'))
    print("ok")
except argon2.exceptions.VerifyMismatchError:
    print("mismatch")
PY
    my $res = <$py>;
    close $py;
    chomp $res if defined $res;
    return $res // 'error';
}
# python receives the composed (NFC) form: the stored hash is of NFC
SKIP: {
    skip 'python3-argon2 is not installed (build.sh installs it): no cross-check by another implementation', 3
        unless $PY_ARGON2;
    is py_verify($phc, $nfc), 'ok', 'python3-argon2 verifies the NFC password against the stored hash';
    is py_verify($phc, "cafe\xcc\x81 $GOOD"), 'mismatch', '... and not the decomposed form (NFC happened before hashing)';
    is py_verify($phc, $GOOD), 'mismatch', '... nor another password';
}

# ---------------------------------------------------------------- sign-in
$r = pw_raw(session => 'alice@example.com', $nfc);
is $r->{status}, 403, '/password/session needs the origin header';
is $r->{json}{code}, 'origin_mismatch', '... origin_mismatch';
$r = pw_raw(session => 'alice@example.com', $nfc, origin => 'http://evil.example');
is $r->{status}, 403, '... and refuses a wrong one';
$r = pw_raw(session => 'alice@example.com', $nfc, %$O);
is $r->{status}, 200, 'password sign-in (composed form) 200' or diag $r->{content};
is $r->{json}{email}, 'alice@example.com', '... with the user JSON';
my $alice_pw = SigninTest::set_cookie_pair($r);
my @set = ref $r->{headers}{'set-cookie'} ? @{ $r->{headers}{'set-cookie'} } : ($r->{headers}{'set-cookie'} // ());
ok((grep { /^svc_dev_session=.*HttpOnly.*SameSite=Lax/ } @set), '... and the session cookie') or diag "@set";
is $r->{headers}{'cache-control'}, 'no-store', '... no-store';
$r = $t->req(GET => '/auth/me', headers => { origin => $t->origin, cookie => $alice_pw });
is $r->{status}, 200, 'the cookie signs in';
$r = pw_raw(session => 'alice@example.com', "cafe\xcc\x81 $GOOD", %$O);
is $r->{status}, 200, 'the decomposed form signs in too (NFC before comparing)';
$r = pw_raw(session => 'alice@example.com', "$nfc ", %$O);
is $r->{status}, 401, 'a trailing space is another password (never trimmed)';
$r = pw_raw(token => 'alice@example.com', $nfc);
is $r->{status}, 200, '/password/token 200 without origin';
is $r->{json}{token_type}, 'Bearer', '... a bearer answer';
ok $r->{json}{expires_in} > 0 && $r->{json}{user}{email} eq 'alice@example.com', '... expires_in and user';
my $alice_bearer = $r->{json}{access_token};
$r = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $alice_bearer" });
is $r->{status}, 200, 'the bearer token works';

# ---------------------------------------------------------------- existing accounts
$t->sleep_until($alice_registered + 0.1 + 0.05);  # the registration backoff (100ms here)
$r = $t->password_req(register => 'alice@example.com', $GOOD2);
is $r->{status}, 202, 'registering an existing account answers the same 202';
$m = $t->last_email('alice@example.com', purpose => 'AlreadyRegistered');
ok $m && $m->{token}, 'an AlreadyRegistered email with a sign-in token is sent';
is $t->password_hash('alice@example.com'), $phc, 'the existing password is not replaced';
$r = $t->req(POST => '/auth/token', json => { token => $m->{token} });
is $r->{status}, 200, 'the AlreadyRegistered token signs the owner in';
is $t->password_hash('alice@example.com'), $phc, '... and still leaves the password alone';

my ($bob_cookie) = $t->sign_in('bob@example.com');  # an email-only account
$r = $t->password_req(register => 'bob@example.com', $GOOD);
is $r->{status}, 202, 'password register of an email-only account 202';
$m = $t->last_email('bob@example.com', purpose => 'AlreadyRegistered');
ok $m, '... sends AlreadyRegistered';
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => $O);
is $r->{status}, 200, '... whose token signs in';
is $t->password_hash('bob@example.com'), '', 'no password is attached to an email-only account';
$r = $t->password_req(token => 'bob@example.com', $GOOD);
is $r->{status}, 401, '... so that password does not sign in';

# ---------------------------------------------------------------- POST /password (fresh session)
my $bob_fresh = SigninTest::set_cookie_pair($r = $t->req(POST => '/auth/session',
    json => { token => $t->request_token('bob@example.com', login => 1) }, headers => $O));
my $bob_fresh_made = time;
$r = $t->req(POST => '/auth/password/change', json => { current => $GOOD, password => $GOOD2 },
    headers => { origin => $t->origin, cookie => $bob_fresh });
is $r->{status}, 403, '/password/change on an account without a password 403';
is $r->{json}{code}, 'no_password', '... no_password';
$r = $t->req(POST => '/auth/password', json => { password => 'Password12345678' }, headers => { origin => $t->origin, cookie => $bob_fresh });
is $r->{status}, 400, 'POST /password applies the policy';
$r = $t->req(POST => '/auth/password', json => { password => $GOOD }, headers => { origin => $t->origin, cookie => $bob_fresh });
is $r->{status}, 204, 'POST /password from a fresh email-token session 204' or diag $r->{content};
is length($r->{content} // ''), 0, '... no body';
$r = $t->req(GET => '/auth/me', headers => { origin => $t->origin, cookie => $bob_cookie });
is $r->{status}, 401, '... every other session of the user ended';
$r = $t->req(GET => '/auth/me', headers => { origin => $t->origin, cookie => $bob_fresh });
is $r->{status}, 200, '... this one stays';
$r = $t->password_req(session => 'bob@example.com', $GOOD, %$O);
is $r->{status}, 200, 'the new password signs in';
my $bob_pw = SigninTest::set_cookie_pair($r);
$r = $t->req(POST => '/auth/password', json => { password => $GOOD2 }, headers => { origin => $t->origin, cookie => $bob_pw });
is $r->{status}, 403, 'POST /password from a password-made session 403';
is $r->{json}{code}, 'fresh_session_required', '... fresh_session_required';
$t->sleep_until($bob_fresh_made + 1 + 0.05);  # signin_password_fresh 1s
$r = $t->req(POST => '/auth/password', json => { password => $GOOD2 }, headers => { origin => $t->origin, cookie => $bob_fresh });
is $r->{status}, 403, 'POST /password from an older email-token session 403';
$r = $t->req(POST => '/auth/password', json => { password => $GOOD2 });
is $r->{status}, 401, 'POST /password without a session 401';

# ---------------------------------------------------------------- POST /password/change
my $carol_other = $t->bearer('carol@example.com');
$r = $t->req(POST => '/auth/session', json => { token => $t->request_token('carol@example.com', login => 1) }, headers => $O);
my $carol = SigninTest::set_cookie_pair($r);
$r = $t->req(POST => '/auth/password', json => { password => $GOOD }, headers => { origin => $t->origin, cookie => $carol });
is $r->{status}, 204, 'carol sets a password';
$carol_other = $t->password_req(token => 'carol@example.com', $GOOD)->{json}{access_token};
my $carol_pw = SigninTest::set_cookie_pair($t->password_req(session => 'carol@example.com', $GOOD, %$O));
my $before = () = $t->emails_to('carol@example.com');
$r = $t->req(POST => '/auth/password/change', json => { current => $GOOD2, password => $GOOD2 },
    headers => { origin => $t->origin, cookie => $carol_pw });
is $r->{status}, 400, 'wrong current password 400';
is $r->{json}{code}, 'wrong_password', '... wrong_password';
$r = $t->req(POST => '/auth/password/change', json => { current => $GOOD, password => 'Sunshine!!!!2025' },
    headers => { origin => $t->origin, cookie => $carol_pw });
is $r->{status}, 400, 'the new password meets the policy';
$r = $t->req(POST => '/auth/password/change', json => { current => $GOOD, password => $GOOD2 },
    headers => { origin => $t->origin, cookie => $carol_pw });
is $r->{status}, 204, 'change from a password-made session 204' or diag $r->{content};
$r = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $carol_other" });
is $r->{status}, 401, '... every other session ended';
$r = $t->req(GET => '/auth/me', headers => { origin => $t->origin, cookie => $carol });
is $r->{status}, 401, '... the cookie ones too';
$r = $t->req(GET => '/auth/me', headers => { origin => $t->origin, cookie => $carol_pw });
is $r->{status}, 200, '... this one stays';
$m = $t->last_email('carol@example.com', purpose => 'PasswordChanged');
ok $m, 'a PasswordChanged notice is emailed';
is $m->{token}, '', '... with an empty token';
is $t->password_req(token => 'carol@example.com', $GOOD)->{status}, 401, 'the old password no longer works';
is $t->password_req(token => 'carol@example.com', $GOOD2)->{status}, 200, 'the new one does';

# ---------------------------------------------------------------- uniform 401
$t->register_password('dave@example.com', $GOOD);
$t->register_password('erin@example.com', $GOOD);
($rc, $out) = $t->admin('suspend', 'erin@example.com');
is $rc, 0, 'erin suspended' or diag $out;
my %bodies;
for my $case (['dave@example.com', $GOOD2, 'wrong password'], ['nobody@example.com', $GOOD, 'unknown address'],
              ['bob@example.com', $GOOD2 . 'x', 'wrong password 2'], ['erin@example.com', $GOOD, 'suspended (right password)']) {
    my $x = $t->password_req(session => $case->[0], $case->[1], %$O);
    is $x->{status}, 401, "401 for $case->[2]";
    $bodies{$x->{content}}++;
}
my ($u) = $t->req(POST => '/auth/session', json => { token => $t->request_token('frank@example.com') }, headers => $O);
my $x = $t->password_req(session => 'frank@example.com', $GOOD, %$O);
is $x->{status}, 401, '401 for an account without a password';
$bodies{$x->{content}}++;
is scalar(keys %bodies), 1, 'every cause gives the same body';
like((keys %bodies)[0], qr/"code":"invalid_credentials"/, '... invalid_credentials');

($rc, $out) = $t->admin('audit', 200);
like $out, qr/"kind":"login.failed","email":"dave\@example.com"/, 'login.failed audited for a real account';
like $out, qr/"kind":"login.failed","email":"erin\@example.com".*"detail":"suspended"/, '... and a suspended one';
unlike $out, qr/"kind":"login.failed","email":"nobody\@example.com"/, 'no login.failed for an unknown address';
unlike $out, qr/\Q$GOOD\E|\Q$GOOD2\E/, 'no password in the audit trail';
unlike $t->error_log, qr/\Q$GOOD\E|\Q$GOOD2\E/, 'no password in error.log';
my $data = $t->stored_bytes;
unlike $data, qr/\Q$GOOD\E|\Q$GOOD2\E/, 'no password in the store (only Argon2id hashes)';
like $data, qr/\$argon2id\$v=19\$m=19456,t=2,p=1\$/, '... which holds the PHC strings';

$t->done;
done_testing;
