# Account changes over HTTP (issue #16): GET /account shows what is held and no
# secret; POST /account/delete needs a fresh session, takes everything in one go, clears the
# cookies, keeps no address in its audit entry, and frees the address; a suspended account gets
# no email (the same 202).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_passwords on; signin_mfa on;},
                                auth => q{signin_pages on;}));
my $O = { origin => $t->origin };
my $email = 'held@example.com';
my $other = $t->sign_in($email);
my ($cookie, $user) = $t->sign_in($email);

is $t->req(GET => '/auth/account')->{status}, 401, 'GET /account needs a session';
my $r = $t->req(GET => '/auth/account', headers => { cookie => $cookie, accept => 'application/json' });
is $r->{status}, 200, 'GET /account (a script: JSON, even with the pages on)';
is $r->{json}{user}{email}, $email, '... the user';
is_deeply $r->{json}{user}{roles}, [], '... its roles';
is $r->{json}{password}, JSON::PP::false, '... no password';
is scalar @{ $r->{json}{sessions} }, 2, '... its live sessions';
is_deeply $r->{json}{mfa}, { totp => JSON::PP::false, recovery_codes_left => 0, remembered_devices => 0 }, '... its second factors';
is $r->{json}{outstanding_codes}, 0, '... no code waiting';
unlike $r->{content}, qr/password_hash|\$argon2|"token"/, '... and nothing secret';
is $t->req(GET => '/auth/account', headers => { cookie => $cookie, accept => 'text/html' })->{headers}{'content-type'},
    'text/html; charset=utf-8', 'a browser navigation to /account gets the account page';

# deletion needs a fresh session
is $t->req(POST => '/auth/password', json => { password => 'a long enough password' }, headers => { %$O, cookie => $cookie })->{status}, 204,
    'a password is set';
my $pw = $t->req(POST => '/auth/password/session', json => { email => $email, password => 'a long enough password' }, headers => $O);
my $stale = SigninTest::set_cookie_pair($pw);
$r = $t->req(POST => '/auth/account/delete', json => {}, headers => { %$O, cookie => $stale });
is $r->{status}, 403, 'delete from a password session: 403';
is $r->{json}{code}, 'fresh_session_required', '... fresh_session_required';
$r = $t->req(POST => '/auth/account/delete', json => {}, headers => { cookie => $cookie, origin => 'https://evil.example' });
is $r->{status}, 403, 'a foreign Origin cannot delete an account';

$t->request_token($email, login => 1);  # a code waiting, to be deleted with the rest
$r = $t->req(POST => '/auth/account/delete', json => {}, headers => { %$O, cookie => $cookie });
is $r->{status}, 204, 'delete from a fresh session: 204';
my @sc = ref $r->{headers}{'set-cookie'} ? @{ $r->{headers}{'set-cookie'} } : ($r->{headers}{'set-cookie'} // ());
ok((grep { /^svc_dev_session=;.*Max-Age=0/ } @sc), '... the session cookie is cleared');
ok((grep { /^svc_dev_device=;.*Max-Age=0/ } @sc), '... and the device cookie');
is $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{status}, 401, 'that session is over';
is $t->req(GET => '/auth/me', headers => { cookie => $stale })->{status}, 401, 'and every other';
my $waiting = $t->last_email($email, purpose => 'SignIn');
$r = $t->req(POST => '/auth/session', json => { token => $waiting->{token} }, headers => $O);
is $r->{status}, 401, 'a code sent before the deletion no longer works';
is $t->req(POST => '/auth/password/session', json => { email => $email, password => 'a long enough password' }, headers => $O)->{status}, 401,
    'nor the password';
my ($rc, $audit) = $t->admin('audit', 50, '--kind', 'user.deleted');
like $audit, qr/user\.deleted/, 'the deletion is audited';
unlike $audit, qr/held\@example\.com/, '... without the address';
my ($again, $new_user) = $t->sign_in($email);
ok $again, 'the address registers again';
isnt $new_user->{id}, $user->{id}, '... as a new account';
is $t->last_email($email)->{purpose}, 'Registration', '... with a Registration email';

# a suspended account gets no email, and the same answer
my $held = () = $t->emails_to($email);
($rc) = $t->admin('suspend', $email);
is $rc, 0, 'signin-admin suspend';
$r = $t->req(POST => '/auth/login', json => { email => $email });
is $r->{status}, 202, 'a suspended account: the same 202';
$t->assert_nothing_sent($email, count => $held, name => 'a suspended account gets no sign-in email');
$r = $t->req(POST => '/auth/register', json => { email => $email });
is $r->{status}, 202, '... and from /register';
$t->assert_nothing_sent($email, count => $held, name => '... nor a registration email');
$t->done;
done_testing;
