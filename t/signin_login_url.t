# signin_login_url (issue #12): a signed-out browser navigation (GET or HEAD that
# accepts text/html) to a gated location gets 302 to the sign-in page with return_to = the path
# and query it asked for, escaped as a query value; an API client (Accept: JSON), a POST and a
# subrequest keep the 401; a signed-in visitor passes; the sign-in page itself is never sent to
# itself (no loop under a server-wide signin_require); nginx -t refuses a login URL that is
# neither a path nor http(s).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => 'signin_limits off;', locations => q{
        signin_require on;
        signin_login_url /login.html;
        location / { proxy_pass http://127.0.0.1:%%PORT2%%; }
        location /q/ { signin_login_url "https://id.example.com/signin?app=1"; proxy_pass http://127.0.0.1:%%PORT2%%; }
        location /ssi/ { ssi on; signin_require off; proxy_pass http://127.0.0.1:%%PORT2%%; }}, servers => q{
    server {
        listen 127.0.0.1:%%PORT2%%;
        location / { default_type text/html; return 200 "page $uri"; }
        location /ssi/ { default_type text/html; return 200 'before <!--# include virtual="/private/x" --> after'; }
    }}));
my $HTML = { accept => 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

my $r = $t->req(GET => '/private/report?year=2026&q=a%20b', headers => $HTML);
is $r->{status}, 302, 'a signed-out browser navigation: 302';
# (nginx makes a relative Location absolute unless absolute_redirect is off)
like $r->{headers}{location}, qr{^(?:http://127\.0\.0\.1:\d+)?/login\.html\?return_to=/private/report%3Fyear=2026%26q=a%2520b$},
    'to the sign-in page, return_to = the path and query, escaped';
like $r->{headers}{'cache-control'} // '', qr/no-store/, 'not cached';
is $t->req(HEAD => '/private/x', headers => $HTML)->{status}, 302, 'HEAD too';

$r = $t->req(GET => '/q/x', headers => $HTML);
is $r->{headers}{location}, 'https://id.example.com/signin?app=1&return_to=/q/x', 'a URL with a query gets &return_to';

$r = $t->req(GET => '/private/x', headers => { accept => 'application/json' });
is $r->{status}, 401, 'an API client keeps the 401';
is $r->{json}{code}, 'unauthenticated', '... unauthenticated';
is $t->req(GET => '/private/x')->{status}, 401, 'no Accept: 401';
is $t->req(POST => '/private/x', headers => $HTML, body => 'a=1')->{status}, 401, 'a POST: 401 (nothing to come back to)';
$r = $t->req(GET => '/ssi/page', headers => $HTML);
unlike $r->{content}, qr/login\.html/, 'a subrequest (SSI include) is not redirected';

$r = $t->req(GET => '/login.html', headers => $HTML);
is $r->{status}, 401, 'the sign-in page itself is not sent to itself (no loop)';

my $cookie = $t->sign_in('alice@example.com');
$r = $t->req(GET => '/private/report', headers => { %$HTML, cookie => $cookie });
is $r->{status}, 200, 'signed in: the page';
is $r->{content}, 'page /private/report', '... from the upstream';
$t->done;

my $c = SigninTest->new;
my ($rc, $out) = $c->nginx_t(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } location = /_signin/deliver { internal; return 204; }
             location /x/ { signin_require on; signin_login_url javascript:alert(1); } }
});
isnt $rc, 0, 'nginx -t refuses a signin_login_url that is not a path or http(s) URL';
like $out, qr/signin_login_url "javascript:alert\(1\)" must be a path or an http\(s\) URL/, '... saying so';
done_testing;
