# Invitations (issue #21): with registration off, `signin-admin invite EMAIL` makes
# the account, so that its sign-in works; --role gives roles; --send writes an Invitation email to
# the outbox (sealed with the same key file), which the running nginx sends within a second and
# whose code signs the person in. A stranger still cannot register.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration off;
    signin_delivery /_signin/deliver;
    signin_limits off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});

is $t->req(POST => '/auth/register', json => { email => 'guest@partner.example' })->{status}, 403,
    'registration is off: /register answers 403';

my ($rc, $out) = $t->admin('invite', 'guest@partner.example', '--role', 'staff', '--send');
is $rc, 0, 'signin-admin invite --role staff --send' or diag $out;
my $m = $t->last_email('guest@partner.example', timeout => 5);
ok $m, 'the running nginx sends the invitation from the outbox';
is $m->{purpose}, 'Invitation', 'purpose Invitation';
is $m->{tag}, 'auth.invitation', 'tag auth.invitation';
like $m->{subject}, qr/invited/i, 'a ready-made invitation email';
my $r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin });
is $r->{status}, 200, 'its code signs the person in';
my $cookie = SigninTest::set_cookie_pair($r);
is_deeply $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{json}{roles}, ['staff'],
    'with the role of the invitation';

($rc, $out) = $t->admin('invite', 'colleague@acme.com');
is $rc, 0, 'signin-admin invite without --send';
($rc, $out) = $t->admin('user', 'colleague@acme.com');
like $out, qr/"pending":true/, 'the invited account is pending';
is $t->req(POST => '/auth/login', json => { email => 'colleague@acme.com' })->{status}, 202, 'the colleague asks for a code';
$m = $t->last_email('colleague@acme.com');
ok $m && $m->{purpose} eq 'SignIn', 'and gets one: the account exists, registration off or not';
is $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin })->{status},
    200, 'and signs in';
($rc, $out) = $t->admin('user', 'colleague@acme.com');
like $out, qr/"pending":false/, '... and is no longer pending';

$t->admin('invite', 'control@acme.com');
$t->req(POST => '/auth/login', json => { email => 'stranger@evil.example' }, finished => 1);
$t->assert_nothing_sent('stranger@evil.example', name => 'a stranger gets no code',
    control => { path => '/auth/login', email => 'control@acme.com' });

($rc, $out) = $t->admin('invite', 'x@acme.com', '--role', 'Not A Role');
isnt $rc, 0, 'a bad role is refused';
like $out, qr/is not a role/, '... saying so';
my (undef, $audit) = $t->admin('audit', 50);
like $audit, qr/user\.invited/, 'invitations are audited';
$t->done;
done_testing;
