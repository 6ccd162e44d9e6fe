# signin_require also guards subrequests: an SSI include of a protected location from a public
# page does not leak it to a visitor who is not signed in, and shows it to one who is.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(locations => q{
location = /public {
    ssi on;
    default_type text/html;
    alias %%PREFIX%%/public.html;
}
location /app/ { signin_require on; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
location /_legacy/ { return 200 "SECRET for $http_x_user"; }
location = /gate { signin_require on; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
location = /via-auth-request {
    auth_request /gate;   # runs in the access phase: no `return` here, it would answer first
    proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
}
}));
open my $fh, '>', $t->prefix . '/public.html' or die;
print $fh "public page <!--# include virtual=\"/app/x\" --> end";
close $fh;

my $r = $t->req(GET => '/public');
is $r->{status}, 200, 'the public page is served';
unlike $r->{content}, qr/SECRET/, 'its include of a protected location shows nothing to a visitor';

my $cookie = $t->sign_in('ssi@example.com');
$r = $t->req(GET => '/public', headers => { cookie => $cookie });
like $r->{content}, qr/SECRET/, 'and shows it to a signed-in user';

$r = $t->req(GET => '/via-auth-request');
is $r->{status}, 401, 'auth_request to a signin_require location: 401 without a session' or diag "$r->{status} $r->{content}";
$r = $t->req(GET => '/via-auth-request', headers => { cookie => $cookie });
is $r->{status}, 200, 'and allowed with one';
like $r->{content}, qr/SECRET/, 'reaching the upstream';
$t->done;

# signin_require on for the whole server still lets visitors sign in: the API location and the
# delivery location are not gated, everything else is.
my $t2 = SigninTest->new;
$t2->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:%%PORT%%;
        signin_require on;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
        location / { proxy_pass http://127.0.0.1:%%PORT2%%; }
    }
    server { listen 127.0.0.1:%%PORT2%%; location / { return 200 "site"; } }
});
is $t2->req(GET => '/page')->{status}, 401, 'server-wide signin_require gates the site';
my $c2 = $t2->sign_in('whole@example.com');   # dies unless register, delivery and session work
ok $c2, 'and visitors can still sign in through the API and the delivery location';
is $t2->req(GET => '/page', headers => { cookie => $c2 })->{status}, 200, 'then the site opens';
$t2->done;
done_testing;
