# The administrators' page (signin_admin) walked in a real browser: Debian's chromium driven by
# playwright-core, axe-core judging every state (t/browser/admin.mjs says what is walked). Each
# observation of the walk is one test here; screenshots at 390 px and 1280 px go to the test's
# temp dir (SIGNIN_SHOTS=dir copies them there).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core')) { plan skip_all => $why }
plan skip_all => 'no oathtool (build.sh installs Debian\'s oathtool)' unless SigninTest::which('oathtool');
local $ENV{CHROMIUM} = $chromium;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_limits off; signin_site_name "Acme Tools"; signin_mfa on; signin_admin on; signin_languages en de;},
    auth => q{signin_pages on;}, locations => q{location = /m { signin_metrics; }}));

my (undef, undef, $recovery) = $t->mfa_enrolled('boss@acme.example');
my ($rc) = $t->admin('role', 'add', 'boss@acme.example', 'admin');
is $rc, 0, 'boss holds the admin role';
$t->sign_in('dave@acme.example');

$t->browser_walk('admin.mjs', 30, $t->origin, $t->prefix, 'boss@acme.example', $recovery->[0], 'dave@acme.example');

$t->done;
done_testing;
