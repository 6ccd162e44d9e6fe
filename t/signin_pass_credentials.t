# The upstream behind signin_require gets the user, not the credential (issue #19 item 8):
# the module's session cookie and a bearer Authorization are taken out of what is proxied,
# other cookies and headers stay; `signin_pass_credentials on` keeps them. The signed-in user
# also survives an internal redirect after the gate (try_files to a named location, error_page).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    locations => q{
        location /app/ {
            signin_require on;
            proxy_set_header X-User $signin_user_email;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
        location /keep/ {
            signin_require on;
            signin_pass_credentials on;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
        location /var/ {
            signin_require on;
            proxy_set_header X-Cookie-Var $http_cookie;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
        location /redirect/ {
            signin_require on;
            root %%PREFIX%%;
            try_files /nothing-here @after;  # precontent phase: after the gate took the cookie
        }
        location @after {
            signin_require on;
            proxy_set_header X-User $signin_user_email;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
    },
    servers => q{
        server {
            listen 127.0.0.1:%%PORT2%%;
            location / {
                return 200 "cookie=[$http_cookie] authorization=[$http_authorization] user=[$http_x_user] var=[$http_x_cookie_var] other=[$http_x_other]\n";
            }
        }
    },
), wait_ports => [$t->port, $t->port2]);

my $cookie = $t->sign_in('upstream@example.com');
my ($name, $secret) = split /=/, $cookie, 2;

my $r = $t->req(GET => '/app/', headers => { cookie => "theme=dark; $cookie; lang=en", 'x-other' => 'kept' });
is $r->{status}, 200, 'signed in by cookie';
like $r->{content}, qr/user=\[upstream\@example\.com\]/, 'the upstream gets the user';
like $r->{content}, qr/cookie=\[theme=dark; lang=en\]/, '... and the other cookies';
unlike $r->{content}, qr/\Q$secret\E/, '... but not the session secret';
like $r->{content}, qr/other=\[kept\]/, '... other headers are untouched';

$r = $t->req(GET => '/app/', headers => { cookie => $cookie });
like $r->{content}, qr/cookie=\[\] /, 'a Cookie line holding only the session is dropped';

$r = $t->req(GET => '/var/', headers => { cookie => "a=1; $cookie" });
like $r->{content}, qr/var=\[a=1\]/, '$http_cookie no longer holds the session either';

my $bearer = $t->bearer('upstream@example.com');
$r = $t->req(GET => '/app/', headers => { authorization => "Bearer $bearer" });
is $r->{status}, 200, 'signed in by bearer';
like $r->{content}, qr/authorization=\[\] /, 'the bearer token does not reach the upstream';
unlike $r->{content}, qr/\Q$bearer\E/, '... anywhere';

$r = $t->req(GET => '/keep/', headers => { cookie => $cookie });
like $r->{content}, qr/cookie=\[\Q$cookie\E\]/, 'signin_pass_credentials on: the cookie is passed';
$r = $t->req(GET => '/keep/', headers => { authorization => "Bearer $bearer" });
like $r->{content}, qr/authorization=\[Bearer \Q$bearer\E\]/, '... and the bearer token';

$r = $t->req(GET => '/redirect/', headers => { cookie => $cookie });
is $r->{status}, 200, 'an internal redirect to another gated location keeps the sign-in' or diag $r->{content};
like $r->{content}, qr/user=\[upstream\@example\.com\]/, '... and $signin_user_email';
is $t->req(GET => '/redirect/')->{status}, 401, 'without a session the first gate refuses';

$t->done;
done_testing;
