# $signin_assertion (issue #21): the upstream behind the gate gets a compact JWS that
# an independent library (PyJWT, Debian's python3-jwt) verifies with the keys of
# {auth_path}/.well-known/jwks.json: iss, aud (signin_origin's host or signin_assertion_audience), sub, email,
# roles, mfa, iat, exp = iat + 60. A wrong audience, an expired or a tampered assertion is refused
# by that library; after `signin-admin key rotate` and a reload, the JWKS still holds the previous
# key. A client-sent X-User-Id or assertion header never reaches the upstream.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $py = SigninTest::python_with('jwt') or plan skip_all => 'needs python3 with PyJWT (Debian python3-jwt)';
system($py, '-c', 'import jwt; from jwt.algorithms import OKPAlgorithm') == 0
    or plan skip_all => 'PyJWT without EdDSA support (python3-cryptography)';

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => 'signin_limits off;', locations => q{
        location /app/ {
            signin_require on;
            proxy_set_header X-User-Id $signin_user_id;
            proxy_set_header X-Signin-Assertion $signin_assertion;
            proxy_pass http://127.0.0.1:%%PORT2%%/echo;
        }
        location /other/ {
            signin_require on;
            signin_assertion_audience https://other.example;
            proxy_set_header X-Signin-Assertion $signin_assertion;
            proxy_pass http://127.0.0.1:%%PORT2%%/echo;
        }}, servers => q{
    server {
        listen 127.0.0.1:%%PORT2%%;
        location /echo { return 200 "$http_x_user_id $http_x_signin_assertion"; }
    }}));

# PyJWT checks a token against a JWKS: prints the claims as JSON, or the exception's class name.
my $checker = $t->prefix . '/check.py';
open my $fh, '>', $checker or die;
print $fh <<'PY';
import datetime, json, sys, jwt, jwt.api_jwt
jwks, token, audience, issuer, later = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
class Later(datetime.datetime):  # PyJWT's clock, `later` seconds ahead
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime.now(tz) + datetime.timedelta(seconds=later)
jwt.api_jwt.datetime = Later
keys = jwt.PyJWKSet.from_json(jwks)
try:
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in keys.keys if k.key_id == kid)
    claims = jwt.decode(token, key.key, algorithms=["EdDSA"], audience=audience, issuer=issuer,
                        options={"require": ["exp", "iat", "iss", "aud", "sub"]})
    print(json.dumps(claims, sort_keys=True))
except StopIteration:
    print("NoKeyForKid")
except Exception as e:
    print(type(e).__name__)
PY
close $fh;

sub check {
    my ($jwks, $token, %o) = @_;
    my @cmd = ($py, $checker, $jwks, $token, $o{aud} // '127.0.0.1', $o{iss} // $t->origin, $o{later} // 0);
    open my $p, '-|', @cmd or die "$py: $!";
    my $out = do { local $/; <$p> };
    close $p;
    chomp $out;
    return $out;
}

my $cookie = $t->sign_in('alice@acme.com');
$t->admin('role', 'add', 'alice@acme.com', 'staff');
my $me = $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{json};

my $r = $t->req(GET => '/auth/.well-known/jwks.json');
is $r->{status}, 200, 'GET .well-known/jwks.json';
my $jwks = $r->{content};
is scalar(@{ $r->{json}{keys} }), 1, 'one key before any rotation';
is $r->{json}{keys}[0]{kty}, 'OKP', 'an OKP key';
is $r->{json}{keys}[0]{alg}, 'EdDSA', 'for EdDSA';

$r = $t->req(GET => '/app/x', headers => { cookie => $cookie, 'x-user-id' => 'forged', 'x-signin-assertion' => 'forged' });
is $r->{status}, 200, 'the gate lets alice in';
my ($uid, $token) = split / /, $r->{content};
is $uid, $me->{id}, 'a client-sent X-User-Id does not reach the upstream';
isnt $token, 'forged', 'nor a client-sent assertion';
my $claims = eval { $SigninTest::JSON->decode(check($jwks, $token)) };
ok $claims, 'PyJWT verifies the assertion with the JWKS' or diag check($jwks, $token);
is $claims->{sub}, $me->{id}, 'sub is the user id';
is $claims->{email}, 'alice@acme.com', 'email';
is_deeply $claims->{roles}, ['staff'], 'roles';
is $claims->{iss}, $t->origin, 'iss is the origin';
is $claims->{aud}, '127.0.0.1', "aud is signin_origin's host";
{
    # the audience is never the client's Host header: an assertion for a host a client names
    # would be accepted by whichever upstream that host is
    my $forged = $t->req(GET => '/app/x', finished => 1, headers => { cookie => $cookie, host => 'evil.example' });
    my (undef, $tok) = split / /, $forged->{content} // '';
    my $c = eval { $SigninTest::JSON->decode(check($jwks, $tok // '')) } || {};
    is $c->{aud}, '127.0.0.1', 'a request with Host: evil.example still gets aud = the origin\'s host';
}
is $claims->{exp} - $claims->{iat}, 60, 'it lives 60 s';
ok !$claims->{mfa}, 'mfa false (no second factor exists yet)';

is check($jwks, $token, aud => 'evil.example'), 'InvalidAudienceError', 'another audience is refused by PyJWT';
is check($jwks, $token, later => 61), 'ExpiredSignatureError', 'an expired one too (checked 61 s later)';
my @p = split /\./, $token;
my $payload = $p[1];
substr($payload, 10, 1) = substr($payload, 10, 1) eq 'A' ? 'B' : 'A';
is check($jwks, join('.', $p[0], $payload, $p[2])), 'InvalidSignatureError', 'a tampered one too';

$r = $t->req(GET => '/other/x', headers => { cookie => $cookie });
my (undef, $other) = split / /, $r->{content};
like check($jwks, $other, aud => 'https://other.example'), qr/"aud": "https:\/\/other.example"/,
    'signin_assertion_audience sets aud';
is $t->req(GET => '/app/x')->{status}, 401, 'signed out: no assertion, 401';

# rotation: the old key stays published, new assertions use the new one
my ($rc, $out) = $t->admin('key', 'rotate');
is $rc, 0, 'signin-admin key rotate' or diag $out;
$t->reload;
$r = $t->req(GET => '/auth/.well-known/jwks.json');
is scalar(@{ $r->{json}{keys} }), 2, 'after a rotation and reload: two keys';
my $jwks2 = $r->{content};
like check($jwks2, $token), qr/"sub"/, 'an assertion signed before the rotation still verifies';
$r = $t->req(GET => '/app/x', headers => { cookie => $cookie });
my (undef, $token2) = split / /, $r->{content};
like check($jwks2, $token2), qr/"sub"/, 'a new one verifies';
isnt((split /\./, $token2)[0], $p[0], 'under another kid');
is check($jwks, $token2), 'NoKeyForKid', 'which the old JWKS did not have';
$t->done;
done_testing;
