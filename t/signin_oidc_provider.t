# The module as an OpenID provider, its configuration and published keys (the code flow itself
# is t/signin_oidc_flow.t): signin_oidc_client and signin_oidc_signing_key_file as nginx -t
# checks them, the discovery document at {auth_path}/.well-known/openid-configuration and the
# keys of its ID tokens at {auth_path}/oauth2/jwks. The published keys are checked against the key files by openssl: the
# RSA modulus and the EC point are the files' own, each kid is the RFC 7638 thumbprint computed
# here, and no private part is published. Without a client both endpoints answer 404.
use strict; use warnings;
use Test::More;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url decode_base64url);
use lib 't/lib'; use SigninTest;

system('openssl version >/dev/null 2>&1') == 0 or plan skip_all => 'needs openssl';

my $t = SigninTest->new;
my $dir = $t->prefix;
sub sh { my $out = `$_[0] 2>&1`; $? == 0 or die "$_[0]: $out"; $out }
sh("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out $dir/rsa.pem");
sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $dir/ec.pem");
sh("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out $dir/small.pem");
open my $fh, '>', "$dir/wiki.secret" or die; print $fh "wiki-secret-0123456789-0123456789-abcdef\n"; close $fh;
open $fh, '>', "$dir/short.secret" or die; print $fh "too-short\n"; close $fh;

my $clients = qq{
    signin_oidc_client wiki redirect_uri=https://wiki.example.com/oauth/cb secret_file=$dir/wiki.secret;
    signin_oidc_client cli redirect_uri=http://127.0.0.1:8400/cb public id_token_alg=ES256;};
my $keys = qq{
    signin_oidc_signing_key_file $dir/rsa.pem;
    signin_oidc_signing_key_file $dir/ec.pem;};

# ---------------------------------------------------------------- nginx -t
for my $case (
    ['a client needs a signing key', $clients, qr/needs a key to sign ID tokens with/],
    ['a client\'s algorithm needs a key of its type', $clients . "signin_oidc_signing_key_file $dir/rsa.pem;",
     qr/client "cli" has its ID tokens signed with ES256, and no signing key of that type/],
    ['an RSA key under 2048 bits', "signin_oidc_signing_key_file $dir/small.pem;", qr/neither RSA of 2048 bits or more/],
    ['a key file that is not there', "signin_oidc_signing_key_file $dir/none.pem;", qr/cannot read/],
    ['a short client secret', "signin_oidc_client w redirect_uri=https://w.example/cb secret_file=$dir/short.secret;$keys",
     qr/signin_oidc_client "w": .*32/],
    ['an http redirect_uri off the loopback', "signin_oidc_client w redirect_uri=http://w.example/cb public;$keys",
     qr/signin_oidc_client "w"/],
    ['a code that would live over ten minutes', $clients . $keys . 'signin_oidc_code_ttl 11m;', qr/signin_oidc_code_ttl must be between 1s and 10m/],
    ['a client named twice', $clients . $keys . "signin_oidc_client cli redirect_uri=http://127.0.0.1:1/cb public;",
     qr/is duplicate/],
) {
    my ($name, $http, $want) = @$case;
    my ($rc, $out) = $t->nginx_t(http => $t->signin_http(extra => $http));
    isnt $rc, 0, "nginx -t refuses: $name";
    like $out, $want, "... and says why: $name";
}
my ($rc, $out) = $t->nginx_t(http => $t->signin_http(extra => $clients . $keys));
is $rc, 0, 'nginx -t accepts two clients and two keys' or diag $out;

# ---------------------------------------------------------------- served
$t->run(http => $t->signin_http(extra => 'signin_limits off;' . $clients . $keys));
my $issuer = $t->origin . '/auth';

my $r = $t->req(GET => '/auth/.well-known/openid-configuration');
is $r->{status}, 200, 'GET {auth_path}/.well-known/openid-configuration';
my $d = $r->{json};
is $d->{issuer}, $issuer, 'the issuer is the origin and the API location';
is $d->{jwks_uri}, "$issuer/oauth2/jwks", 'jwks_uri';
is $d->{token_endpoint}, "$issuer/oauth2/token", 'token_endpoint under the issuer';
is_deeply $d->{id_token_signing_alg_values_supported}, ['RS256', 'ES256'], 'the algorithms of the keys given';
is_deeply $d->{code_challenge_methods_supported}, ['S256'], 'PKCE S256 only';
ok $d->{authorization_response_iss_parameter_supported}, 'iss on the redirect (RFC 9207)';

$r = $t->req(GET => '/auth/oauth2/jwks');
is $r->{status}, 200, 'GET {auth_path}/oauth2/jwks';
my @jwks = @{ $r->{json}{keys} };
is scalar(@jwks), 2, 'both keys are published';
my ($rsa) = grep { $_->{kty} eq 'RSA' } @jwks;
my ($ec) = grep { $_->{kty} eq 'EC' } @jwks;
ok $rsa && $ec, 'an RSA key and an EC key';
is $rsa->{alg}, 'RS256', 'RSA for RS256';
is $ec->{alg}, 'ES256', 'EC for ES256';
is $ec->{crv}, 'P-256', 'on P-256';
for my $k (@jwks) {
    is $k->{use}, 'sig', "$k->{kty}: use sig";
    ok !exists $k->{$_}, "$k->{kty}: no private member $_" for qw(d p q dp dq qi);
}

# the modulus and the point are the key files' own, as openssl reads them
my ($modulus) = sh("openssl rsa -in $dir/rsa.pem -noout -modulus") =~ /Modulus=([0-9A-F]+)/;
is uc unpack('H*', decode_base64url($rsa->{n})), $modulus, 'n is the RSA key file\'s modulus';
my $pub = sh("openssl ec -in $dir/ec.pem -pubout -outform DER 2>/dev/null");
my $point = "\x04" . decode_base64url($ec->{x}) . decode_base64url($ec->{y});
is substr($pub, -65), $point, 'x and y are the EC key file\'s public point';

# RFC 7638: the SHA-256 of the required members, in lexical order, without spaces
is $rsa->{kid}, encode_base64url(sha256(qq({"e":"$rsa->{e}","kty":"RSA","n":"$rsa->{n}"}))),
    'the RSA kid is its JWK thumbprint';
is $ec->{kid}, encode_base64url(sha256(qq({"crv":"P-256","kty":"EC","x":"$ec->{x}","y":"$ec->{y}"}))),
    'the EC kid is its JWK thumbprint';

$r = $t->req(POST => '/auth/oauth2/jwks', json => {});
is $r->{status}, 405, 'POST to the keys is 405';
$t->done;

# ---------------------------------------------------------------- no client, no provider
my $plain = SigninTest->new;
$plain->run(http => $plain->signin_http(extra => 'signin_limits off;'));
is $plain->req(GET => '/auth/.well-known/openid-configuration')->{status}, 404, 'no client: no discovery document';
is $plain->req(GET => '/auth/oauth2/jwks')->{status}, 404, 'no client: no keys';
$plain->done;

done_testing;
