# signin_require on a location that routes API versions: routing leaves the location in the
# rewrite phase (for a named controller), before its access phase; the gate must still hold.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{
signin_limits off;
api_versions {
    strategy path;
    default v1;
    version v1 { controller @v1 { GET /things; } }
}
}, locations => q{
location /api/ { signin_require on; api_versions_route; }
location @v1 { proxy_set_header X-User $signin_user_email; proxy_pass http://127.0.0.1:%%PORT2%%; }
}, servers => q{server { listen 127.0.0.1:%%PORT2%%;
    location / { return 200 "controller reached user=[$http_x_user] cookie=[$http_cookie]"; } }}));

my $r = $t->req(GET => '/api/v1/things');
is $r->{status}, 401, 'signin_require on the routed location refuses a visitor';
unlike $r->{content} // '', qr/controller reached/, 'and the controller is not reached';
my $cookie = $t->sign_in('api@example.com');
$r = $t->req(GET => '/api/v1/things', headers => { cookie => $cookie });
is $r->{status}, 200, 'a signed-in user is routed';
like $r->{content}, qr/controller reached/, 'to the controller';
# the jump to the named controller keeps who signed in (issue #19 item 7)
like $r->{content}, qr/user=\[api\@example\.com\]/, '... which gets $signin_user_email';
like $r->{content}, qr/cookie=\[\]/, '... and not the session cookie';
$t->done;
done_testing;
