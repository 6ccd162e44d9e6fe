# The administrators' page (signin_admin with signin_pages): {auth_path}/admin/ is an HTML shell
# with the pages' strict CSP, loading its hashed script from the pages' assets; it holds nothing of
# the store, whoever asks (what it shows comes from admin/api/, which refuses a non-administrator
# with 403). With signin_admin off there is no such page.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on; signin_admin on;},
    auth => q{signin_pages on;}));
my $origin = $t->origin;

my ($carol_cookie) = $t->sign_in('carol@acme.example');
my ($dave_cookie, $dave) = $t->sign_in('dave@acme.example');

my $r = $t->req(GET => '/auth/admin/', headers => { accept => 'text/html' });
is $r->{status}, 200, 'GET {auth_path}/admin/ is the administrators\' page';
like $r->{headers}{'content-type'}, qr{^text/html; charset=utf-8}, '... HTML';
my $csp = $r->{headers}{'content-security-policy'} // '';
like $csp, qr/default-src 'none'/, '... CSP: nothing by default';
like $csp, qr/script-src 'self'(;|$)/, '... scripts from this origin only, none inline';
like $csp, qr/frame-ancestors 'none'/, '... never in a frame';
unlike $csp, qr/unsafe|\*|https?:/, '... no unsafe-*, no wildcard, no other host';
is $r->{headers}{'x-frame-options'}, 'DENY', '... X-Frame-Options DENY';
like $r->{headers}{'cache-control'}, qr/no-store/, '... not stored';
unlike $r->{content}, qr{<script(?![^>]*\bsrc=)}i, '... no inline script';
like $r->{content}, qr{<title>Administration · }, '... titled';
my ($js) = $r->{content} =~ m{src="\.\./(assets/admin\.js\?v=[0-9a-f]{12})"};
ok $js, '... its script named with a content hash';
my ($css) = $r->{content} =~ m{href="\.\./(assets/pages\.css\?v=[0-9a-f]{12})"};
ok $css, '... and the pages\' stylesheet';

$r = $t->req(GET => "/auth/$js");
is $r->{status}, 200, 'the script is served';
like $r->{headers}{'content-type'}, qr{^text/javascript}, '... as JavaScript';
is $r->{headers}{'cache-control'}, 'no-cache', '... revalidated';
like $r->{headers}{etag} // '', qr/^"[0-9a-f]{12}"$/, '... by its ETag';
like $r->{content}, qr{admin/api/|"api/users}, '... and it reads the admin API';

# the page is the same for a stranger, a non-administrator and an administrator: nothing of the
# store is in it
my $anon = $t->req(GET => '/auth/admin/')->{content};
my $as_carol = $t->req(GET => '/auth/admin/', headers => { cookie => $carol_cookie })->{content};
is $as_carol, $anon, 'a signed-in non-administrator gets the same shell as anyone';
unlike $as_carol, qr/carol|dave|\Q$dave->{id}\E/, '... naming nobody';
$r = $t->req(GET => '/auth/admin/api/users', headers => { cookie => $carol_cookie });
is $r->{status}, 403, 'and the API the page reads refuses a non-administrator: 403';
is $r->{json}{code}, 'forbidden', '... forbidden';
is $t->req(GET => '/auth/admin/api/users')->{status}, 401, '... and a stranger: 401';
$r = $t->req(POST => '/auth/admin/', json => {}, headers => { origin => $origin, cookie => $carol_cookie });
isnt $r->{status}, 200, 'a POST to the page is no page';
is $t->req(GET => '/auth/admin')->{status}, 404, 'without the trailing slash: no page (the assets are relative to it)';

$t->done;

# signin_admin off: no administrators' page
my $u = SigninTest->new;
$u->run(http => $u->signin_http(extra => q{signin_mfa on;}, auth => q{signin_pages on;}));
is $u->req(GET => '/auth/admin/')->{status}, 404, 'signin_admin off: GET {auth_path}/admin/ is 404';
$u->done;

done_testing;
