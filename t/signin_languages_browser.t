# The pages in the visitor's language walked in Chromium with --lang=de, ja and ar (t/browser/
# languages.mjs): each language's pages, axe-core clean, screenshots at 390 and 1280 px, Arabic
# right to left and mirrored, the email in the browser's language, the picker. Screenshots are
# written to the test's temp dir (kept with SIGNIN_KEEP=1; SIGNIN_SHOTS=dir copies them there).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core')) { plan skip_all => $why }
local $ENV{CHROMIUM} = $chromium;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_limits off; signin_site_name Acme; signin_languages en de fr ja ar;},
    auth => q{signin_pages on;}));
$t->browser_walk('languages.mjs', 15, $t->origin, $t->prefix, $_) for qw(de ja ar);
$t->done;
done_testing;
