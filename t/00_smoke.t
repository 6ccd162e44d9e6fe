use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});
my $r = $t->req(POST => '/auth/register', json => { email => 'a@example.com' });
is $r->{status}, 202, 'register 202' or diag $r->{content};
my $m = $t->last_email('a@example.com');
ok $m && $m->{token}, 'email delivered';
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin });
is $r->{status}, 200, 'session' or diag $r->{content};
my $c = SigninTest::set_cookie_pair($r);
$r = $t->req(GET => '/auth/me', headers => { cookie => $c });
is $r->{status}, 200, 'me'; is $r->{json}{email}, 'a@example.com';
$t->done;
done_testing;
