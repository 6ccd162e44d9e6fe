# OpenID Connect providers (signin_provider) in a real browser against a real
# provider: Debian's chromium, driven by playwright-core (t/browser/providers.mjs says what is
# walked), signs in through the npm oidc-provider's own login and consent pages, on the
# ready-made pages, and axe-core judges them.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core', 'oidc-provider', 'jose')) { plan skip_all => $why }
local $ENV{CHROMIUM} = $chromium;

my $t = SigninTest->new;
my $dir = $t->prefix;
my $origin = $t->origin;
open my $fh, '>', "$dir/idp.secret" or die; print $fh "idp-secret-value\n"; close $fh;
my $idp = SigninTest::Provider->new(port => $t->port2, keys => "$dir/keys.json", client_id => 'nginx',
    secret => 'idp-secret-value', redirect => ["$origin/auth/providers/idp/callback"], interactive => 1,
    log => "$dir/idp.log");
$t->run(http => $t->signin_http(
    extra => qq{signin_limits off;
        signin_provider idp issuer=http://127.0.0.1:%%PORT2%% client_id=nginx client_secret_file=$dir/idp.secret
                        "label=Test ID" trust_email=on;
        signin_provider_fetch /_signin/provider;
        signin_login_url /auth/;},
    auth => 'signin_pages on;',
    locations => q{
        location = /_signin/provider { internal; proxy_pass $signin_provider_url; subrequest_output_buffer_size 64k; }
        location /app/ { signin_require on; proxy_set_header X-User $signin_user_email;
                         proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
        location /_legacy/ { default_type text/plain; return 200 "app: $http_x_user\n"; }
}));
$t->browser_walk('providers.mjs', 12, $t->origin, $dir, $idp->issuer);
$t->done;
$idp->stop;
done_testing;
