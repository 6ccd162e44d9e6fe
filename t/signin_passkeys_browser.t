# Passkeys (signin_passkeys) in a real browser: Debian's chromium with the DevTools
# WebAuthn virtual authenticator, driven by playwright-core (t/browser/passkeys.mjs says what is
# walked), and @simplewebauthn/server as a second implementation that verifies the same
# registration and assertions and refuses the same tampered ones. Then the audit trail names every
# refusal's reason, and nginx -t checks signin_passkey_rp_id.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use JSON::PP;

my $root = $ENV{SIGNIN_ROOT} || '.';
my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core', 'axe-core', '@simplewebauthn/server')) { plan skip_all => $why }
local $ENV{CHROMIUM} = $chromium;

# WebAuthn wants a domain name: the site is http://localhost:PORT (chromium maps it to 127.0.0.1)
my $t = SigninTest->new;
my $http = $t->signin_http(
    extra => q{signin_limits off; signin_passkeys on; signin_mfa on; signin_site_name "Acme Tools";},
    auth => q{signin_pages on;},
    locations => q{
location /strong/ { signin_require mfa; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
location /_legacy/ { default_type text/plain; return 200 "strong: $http_x_user\n"; }
});
$http =~ s{signin_origin http://127\.0\.0\.1:}{signin_origin http://localhost:};
$t->run(http => $http);
my $base = 'http://localhost:' . $t->port;

# the API without a browser
my $r = $t->req(POST => '/auth/passkeys/login/options', json => {});
is $r->{status}, 200, 'POST /passkeys/login/options needs no session';
is $r->{json}{rpId}, 'localhost', '... rpId is the origin\'s host';
is $t->req(POST => '/auth/passkeys/register/options', json => {}, headers => { origin => $base })->{status}, 401,
    'registration options need a session';
$r = $t->req(POST => '/auth/passkeys/session', json => { credential => { type => 'public-key', id => 'AAAA', rawId => 'AAAA',
    response => { clientDataJSON => 'e30', authenticatorData => 'AAAA', signature => 'AAAA', userHandle => 'AAAA' } } },
    headers => { origin => $base });
is $r->{status}, 401, 'a malformed assertion: 401';
is $r->{json}{code}, 'passkey_refused', '... passkey_refused';
is $t->req(POST => '/auth/passkeys/session', json => { credential => {} })->{status}, 403,
    '... /passkeys/session is a cookie write: no Origin, 403';

local $ENV{OATHTOOL} = SigninTest::which('oathtool') // '';
$t->browser_walk('passkeys.mjs', 25, $base, $t->prefix);

# every refusal is audited with its reason; additions, uses and removals too
my ($rc, $audit) = $t->admin('audit', 500);
for my $why ('register:origin', 'register:rp_id', 'register:user_presence', 'sign_in:challenge spent', 'sign_in:counter',
             'sign_in:signature', 'sign_in:origin', 'sign_in:unknown credential') {
    like $audit, qr/passkey\.refused.*\Q$why\E|\Q$why\E.*passkey\.refused/, "audit: passkey.refused $why";
}
like $audit, qr/passkey\.added/, 'audit: passkey.added';
like $audit, qr/passkey\.used/, 'audit: passkey.used';
like $audit, qr/passkey\.removed/, 'audit: passkey.removed';
$t->done;

# nginx -t: the relying party id must be the origin's host or a domain it is under
my $t2 = SigninTest->new;
my ($code, $msg) = $t2->nginx_t(http => $t2->signin_http(extra => 'signin_passkeys on; signin_passkey_rp_id example.com;'));
isnt $code, 0, 'signin_passkey_rp_id of another domain: nginx -t fails';
like $msg, qr/neither the origin's host/, '... and says why';
($code, $msg) = $t2->nginx_t(http => $t2->signin_http(extra => 'signin_passkeys on;'));
is $code, 0, 'passkeys on an IP-address origin: nginx -t passes';
like $msg, qr/\[warn\].*browsers refuse an IP address.*localhost/, '... with a warning that names the fix';
done_testing;
