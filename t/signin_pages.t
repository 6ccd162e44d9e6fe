# signin_pages over HTTP: the sign-in and account pages and their assets are served
# by the signin_api location with a strict CSP and the other security headers; assets revalidate
# by ETag; the site's name is escaped; nginx -t refuses the pages without signin_api and a
# stylesheet that is not a path of this site. The browser walks are in t/signin_pages_browser.t.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_site_name "Acme <Tools>"; signin_passwords on;},
    auth => q{signin_pages on; signin_pages_css /static/site.css;},
    locations => q{location /plain/ { signin_api; }}));

my $r = $t->req(GET => '/auth/');
is $r->{status}, 200, 'GET {auth_path}/ is the sign-in page';
like $r->{headers}{'content-type'}, qr{^text/html; charset=utf-8}, '... HTML';
my $csp = $r->{headers}{'content-security-policy'} // '';
like $csp, qr/default-src 'none'/, '... CSP: nothing by default';
like $csp, qr/script-src 'self'(;|$)/, '... scripts from this origin only, none inline';
like $csp, qr/frame-ancestors 'none'/, '... never in a frame';
unlike $csp, qr/unsafe|\*|https?:/, '... no unsafe-*, no wildcard, no other host';
is $r->{headers}{'referrer-policy'}, 'no-referrer', '... Referrer-Policy: no-referrer';
is $r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff';
is $r->{headers}{'x-frame-options'}, 'DENY', '... X-Frame-Options DENY for older browsers';
like $r->{headers}{'cache-control'}, qr/no-store/, '... not stored';
like $r->{content}, qr{<title>Sign in · Acme &lt;Tools&gt;</title>}, '... the site name, escaped';
unlike $r->{content}, qr{<Tools>}, '... never raw';
like $r->{content}, qr{data-passwords="on"}, '... told that passwords are on';
like $r->{content}, qr{data-registration="on"}, '... and registration';
like $r->{content}, qr{<link rel="stylesheet" href="/static/site\.css">}, '... with the site stylesheet';
unlike $r->{content}, qr{<script(?![^>]*\bsrc=)}i, '... and no inline script';

$r = $t->req(GET => '/auth/?return_to=%2Fapp%2F');
is $r->{status}, 200, 'the sign-in page with a return_to';

$r = $t->req(GET => '/auth/account', headers => { accept => 'text/html' });
is $r->{status}, 200, 'GET {auth_path}/account from a browser is the account page';
like $r->{content}, qr{<title>Your account · Acme &lt;Tools&gt;</title>}, '... titled';
like $r->{headers}{'content-security-policy'} // '', qr/frame-ancestors 'none'/, '... with the CSP';

# the assets the pages load
my ($js) = $t->req(GET => '/auth/')->{content} =~ m{src="(assets/signin\.js\?v=[0-9a-f]{12})"};
ok $js, 'the page names its script with a content hash';
$r = $t->req(GET => "/auth/$js");
is $r->{status}, 200, 'the script is served';
like $r->{headers}{'content-type'}, qr{^text/javascript}, '... as JavaScript';
is $r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff';
is $r->{headers}{'cache-control'}, 'no-cache', '... revalidated';
my $etag = $r->{headers}{etag};
like $etag // '', qr/^"[0-9a-f]{12}"$/, '... with an ETag';
$r = $t->req(GET => '/auth/assets/signin.js', headers => { 'if-none-match' => $etag });
is $r->{status}, 304, 'If-None-Match: 304';
is length($r->{content} // ''), 0, '... no body';
for my $asset (qw(pages.css common.js account.js)) {
    is $t->req(GET => "/auth/assets/$asset")->{status}, 200, "assets/$asset";
}
for my $bad ('assets/signin.html', 'assets/nope.js', 'assets/../signin.js', 'assets/', 'assets/%2e%2e/x.js') {
    $r = $t->req(GET => "/auth/$bad");
    is $r->{status}, 404, "$bad: 404";
}
$r = $t->req(HEAD => '/auth/');
is $r->{status}, 200, 'HEAD of the page';
is length($r->{content} // ''), 0, '... no body';

# the API is unchanged beside the pages
$r = $t->req(POST => '/auth/', json => {}, headers => { origin => $t->origin });
is $r->{status}, 404, 'POST {auth_path}/ is still not an endpoint';
is $t->req(GET => '/auth/me')->{status}, 401, 'GET /me answers as before';
$r = $t->req(GET => '/auth/account', headers => { accept => 'application/json' });
is $r->{status}, 401, 'GET /account from a script is the API (what is held), not the page';
is $r->{json}{code}, 'unauthenticated', '... signed out: 401';

# without signin_pages the pages do not exist
$r = $t->req(GET => '/plain/');
is $r->{status}, 404, 'signin_api without signin_pages: GET / is 404';
is $r->{json}{code}, 'not_found', '... not_found';
is $t->req(GET => '/plain/assets/signin.js')->{status}, 404, '... and no assets';
is $t->req(GET => '/plain/account', headers => { accept => 'text/html' })->{status}, 401,
    '... and no account page: the API answers (signed out)';
$t->done;

# a signed-in browser that a gated location's rules refuse gets a 403 page naming the account
$t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off;}, auth => q{signin_pages on;}, locations => q{
location /staff/ { signin_require on; signin_login_url /auth/; signin_allow email boss@example.com; proxy_pass http://127.0.0.1:%%PORT%%/_up/; }
location /staff-json/ { signin_require on; signin_allow email boss@example.com; proxy_pass http://127.0.0.1:%%PORT%%/_up/; }
location /_up/ { return 200 "staff\n"; }
}));
my $eve = $t->sign_in('eve@example.com');
$r = $t->req(GET => '/staff/list?a=1&b=<2>', headers => { cookie => $eve, accept => 'text/html' });
is $r->{status}, 403, 'a refused browser navigation: 403';
like $r->{headers}{'content-type'}, qr{^text/html}, '... an HTML page';
like $r->{content}, qr{signed in as <strong class="address">eve\@example\.com</strong>}, '... naming the account';
like $r->{content}, qr{href="/auth/\?return_to=/staff/list%3Fa%3D1%26b%3D%3C2%3E"}, '... a way to another account, and back';
like $r->{content}, qr{src="/auth/assets/forbidden\.js\?v=}, '... its script from the pages';
like $r->{headers}{'content-security-policy'} // '', qr/script-src 'self';.*frame-ancestors 'none'/, '... under the CSP';
unlike $r->{content}, qr/staff\n/, '... and nothing of the upstream';
$r = $t->req(GET => '/staff/list', headers => { cookie => $eve, accept => 'application/json' });
is $r->{status}, 403, 'a script: 403';
is $r->{json}{code}, 'forbidden', '... JSON forbidden, as before';
$r = $t->req(GET => '/staff-json/', headers => { cookie => $eve, accept => 'text/html' });
is $r->{json}{code}, 'forbidden', 'without signin_login_url a browser gets the JSON 403 too';
$r = $t->req(GET => '/staff/', headers => { accept => 'text/html' });
is $r->{status}, 302, 'signed out, the browser is still sent to sign in';
$t->done;

# a site replaces a page with an exact location, which nginx prefers to the signin_api prefix
$t = SigninTest->new;
mkdir $t->prefix . '/www';
open my $fh, '>', $t->prefix . '/www/signin.html' or die;
print $fh "<!doctype html><title>our own sign-in page</title>\n";
close $fh;
$t->run(http => $t->signin_http(auth => q{signin_pages on;},
    locations => q{location = /auth/ { root %%PREFIX%%/www; try_files /signin.html =404; }}));
like $t->req(GET => '/auth/')->{content}, qr/our own sign-in page/, 'an exact location replaces the sign-in page';
is $t->req(GET => '/auth/account', headers => { accept => 'text/html' })->{status}, 200, '... the account page stays';
is $t->req(GET => '/auth/me')->{status}, 401, '... and the API';
$t->done;

# nginx -t
my $c = SigninTest->new;
my ($rc, $out) = $c->nginx_t(http => $c->signin_http(locations => q{location /p/ { signin_pages on; }}));
isnt $rc, 0, 'signin_pages without signin_api is refused';
like $out, qr/"signin_pages" needs "signin_api" in the same location/, '... saying why';
for my $css ('https://cdn.example/site.css', '//cdn.example/site.css', 'site.css', '/a b.css', '/\\x.css') {
    ($rc, $out) = $c->nginx_t(http => $c->signin_http(auth => qq{signin_pages on; signin_pages_css "$css";}));
    isnt $rc, 0, "signin_pages_css $css is refused";
    like $out, qr/signin_pages_css .* must be a path of this site/, '... saying why';
}
done_testing;
