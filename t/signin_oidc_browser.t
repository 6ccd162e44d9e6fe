# The module as an OpenID provider in a real browser: Debian's chromium, driven by playwright-core
# (t/browser/oidc.mjs says what is walked), goes from an application's authorization request
# (written by openid-client) through the site's sign-in page and the consent page back to the
# application with a code, which openid-client exchanges; axe-core judges the consent page at
# 1280 and 390 px, styled by the sign-in pages' stylesheet (signin_pages on).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core', 'openid-client')) { plan skip_all => $why }
system('openssl version >/dev/null 2>&1') == 0 or plan skip_all => 'needs openssl';
local $ENV{CHROMIUM} = $chromium;

my $t = SigninTest->new;
my $dir = $t->prefix;
system("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out $dir/rsa.pem 2>/dev/null") == 0 or die 'openssl';
open my $fh, '>', "$dir/wiki.secret" or die; print $fh "wiki-secret-0123456789-0123456789-abcdef\n"; close $fh;
my $cb = 'http://127.0.0.1:9/wiki/cb';
$t->run(http => $t->signin_http(
    extra => qq{signin_limits off;
        signin_oidc_client wiki redirect_uri=$cb secret_file=$dir/wiki.secret;
        signin_oidc_signing_key_file $dir/rsa.pem;},
    auth => 'signin_pages on;'));
$t->browser_walk('oidc.mjs', 10, $t->origin, $dir, 'wiki', "$dir/wiki.secret", $cb);
$t->done;
done_testing;
