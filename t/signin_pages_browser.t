# The ready-made pages (signin_pages) walked in a real browser: Debian's chromium
# driven by playwright-core, axe-core judging every page and state (t/browser/pages.mjs says what
# is walked). Each observation of the walk is one test here. Screenshots at 390 px and 1280 px are
# written to the test's temp dir (kept with SIGNIN_KEEP=1; SIGNIN_SHOTS=dir copies them there).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use JSON::PP;

my $root = $ENV{SIGNIN_ROOT} || '.';
# optional tools (build.sh installs them): without one this file is skipped, the run goes on
my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core')) { plan skip_all => $why }
local $ENV{CHROMIUM} = $chromium;

my $ttl = 8;  # seconds: the walk waits for one code to expire
my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => qq{signin_limits off; signin_passwords on; signin_site_name "Acme Tools"; signin_token_ttl ${ttl}s; signin_token_resend 5s; signin_mfa on;},
    auth => q{signin_pages on;},
    locations => q{
location /app/ {
    signin_require on;
    signin_login_url /auth/;
    proxy_set_header X-User-Email $signin_user_email;
    proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
}
location /staff/ {
    signin_require on;
    signin_login_url /auth/;
    signin_allow email boss@example.com;
    proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
}
location /_legacy/ { default_type text/plain; return 200 "legacy app: hello $http_x_user_email\n"; }
}));

local $ENV{OATHTOOL} = SigninTest::which('oathtool') // '';
$t->browser_walk('pages.mjs', 40, $t->origin, $t->prefix, $ttl);
$t->done;

# registration off: the page asks /login and says what that means; an account made by the admin tool signs in
$t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off;}, auth => q{signin_pages on;}) =~ s/signin_registration on;/signin_registration off;/r);
my $member = 'member@example.com';
my ($rc, $admin_out) = $t->admin('invite', $member);
is $rc, 0, 'signin-admin invite makes an account' or diag $admin_out;
$t->browser_walk('pages_closed.mjs', 6, $t->origin, $member);
$t->done;
done_testing;
