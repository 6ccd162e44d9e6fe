# The administrators' page (signin_admin with signin_pages): {auth_path}/admin/ is an HTML shell
# with the pages' strict CSP, loading its hashed script from the pages' assets; it holds nothing of
# the store (what it shows comes from admin/api/). A signed-in account without the role gets the
# 403 page instead, a stranger the shell (which sends them to sign in). With signin_admin off there
# is no such page.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on; signin_admin on;},
    auth => q{signin_pages on;}, locations => q{location = /m { signin_metrics; }}));
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

# a stranger and an administrator get the same shell: nothing of the store is in it
my $anon = $t->req(GET => '/auth/admin/')->{content};
my ($boss_cookie) = $t->sign_in('boss@acme.example');
$t->admin('role', 'add', 'boss@acme.example', 'admin');
my $as_boss = $t->req(GET => '/auth/admin/', headers => { cookie => $boss_cookie });
is $as_boss->{status}, 200, 'an administrator gets the page';
is $as_boss->{content}, $anon, '... the same shell as a stranger';
unlike $as_boss->{content}, qr/boss|carol|dave|\Q$dave->{id}\E/, '... naming nobody';

# a signed-in account without the role: the 403 page, before any script runs
$r = $t->req(GET => '/auth/admin/', headers => { cookie => $carol_cookie, accept => 'text/html' });
is $r->{status}, 403, 'a signed-in non-administrator gets 403';
like $r->{headers}{'content-type'}, qr{^text/html}, '... a page';
like $r->{content}, qr{<title>Not for this account · }, '... the "not for this account" page';
like $r->{content}, qr{carol\@acme\.example}, '... naming the account signed in';
unlike $r->{content}, qr{admin\.js}, '... without the administrators\' script';
like $r->{content}, qr{data-login-url="/auth/"}, '... signing out through this API location';
like $r->{content}, qr{src="/auth/assets/forbidden\.js\?v=}, '... its script from this location\'s assets';
like $r->{headers}{'content-security-policy'} // '', qr/script-src 'self'(;|$)/, '... under the same CSP';
my $m = $t->req(GET => '/m')->{content};
like $m, qr/^signin_signin_failures_total\{reason="forbidden"\} [1-9]/m, '... and counted as a refusal';
$t->admin('role', 'add', 'carol@acme.example', 'admin');
is $t->req(GET => '/auth/admin/', headers => { cookie => $carol_cookie })->{status}, 200,
    '... and once given the role, the page';
$t->admin('role', 'remove', 'carol@acme.example', 'admin');
$t->admin('suspend', 'boss@acme.example');
is $t->req(GET => '/auth/admin/', headers => { cookie => $boss_cookie })->{status}, 200,
    'a suspended account\'s session has ended: the shell, which sends it to sign in';
is $t->req(GET => '/auth/admin/', headers => { cookie => 'svc_dev_session=' . ('A' x 43) })->{status}, 200,
    'a cookie that is no session: the shell too';
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
