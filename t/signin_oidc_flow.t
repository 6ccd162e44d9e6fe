# The module as an OpenID provider, the code flow end to end: openid-client (a certified
# relying-party library, t/tools/oidc_rp.mjs) discovers the provider and writes the
# authorization request with PKCE, state and nonce; the test walks the browser's part (the
# sign-in page's detour when nobody is signed in, a sign-in by an emailed link, the consent
# page and its form, in the language the browser asks for: German for Accept-Language: de, right
# to left for Arabic, English for a language not configured); openid-client exchanges the code,
# verifies the ID token against the
# published keys and reads the userinfo; Debian's oauthlib and PyJWT do the same as a second,
# independent relying party. Then the refusals of the OAuth security BCP, by hand:
# a redirect URI not registered (a page, never a redirect), a code used twice (refused, and the
# access token it gave stops working), a wrong PKCE verifier, a missing one (downgrade), a public
# client without PKCE, one client's code taken to another, prompt=none without a session, a
# consent form from another origin, a person a client's allow= leaves out; refresh tokens rotated
# and their reuse ending the family, revocation, prompt=login asking for a new sign-in, and
# RP-initiated logout (asked first without a verified id_token_hint, back only to a registered
# post_logout_redirect_uri). On
# LMDB, and on PostgreSQL with SIGNIN_TEST_PG.
use strict; use warnings;
use Test::More;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url encode_base64);
use JSON::PP;
use URI::Escape qw(uri_escape uri_unescape);
use lib 't/lib'; use SigninTest;

system('openssl version >/dev/null 2>&1') == 0 or plan skip_all => 'needs openssl';
if (my $why = SigninTest::missing_node_packages('openid-client')) { plan skip_all => $why }

my $t = SigninTest->new;
my $dir = $t->prefix;
system("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out $dir/rsa.pem 2>/dev/null") == 0 or die 'openssl';
my $secret = 'wiki-secret-0123456789-0123456789-abcdef';
open my $fh, '>', "$dir/wiki.secret" or die; print $fh "$secret\n"; close $fh;

my $wiki_cb = 'http://127.0.0.1:9/wiki/cb';
my $cli_cb = 'http://127.0.0.1:9/cli/cb';
my $wiki_bye = 'http://127.0.0.1:9/wiki/bye';
$t->run(http => $t->signin_http(extra => qq{
    signin_limits off;
    signin_mfa on;
    signin_languages en de ar;
    signin_oidc_client wiki redirect_uri=$wiki_cb secret_file=$dir/wiki.secret post_logout_redirect_uri=$wiki_bye;
    signin_oidc_client cli redirect_uri=$cli_cb public consent=off;
    signin_oidc_client acme redirect_uri=$cli_cb public consent=off allow=domain:acme.example;
    signin_oidc_client ops redirect_uri=$cli_cb public consent=off require=mfa;
    signin_oidc_signing_key_file $dir/rsa.pem;}, locations => 'location = /metrics { signin_metrics; }'));
my $origin = $t->origin;
my $issuer = "$origin/auth";

my $JSON = JSON::PP->new->canonical;
sub rp {
    my (%in) = @_;
    my $file = "$dir/rp.json";
    open my $f, '>', $file or die; print $f $JSON->encode({ issuer => $issuer, %in }); close $f;
    my $root = $ENV{SIGNIN_ROOT} || '.';
    my $out = `cd $root/t && timeout 60 node tools/oidc_rp.mjs $file 2>&1`;
    my $v = eval { $JSON->decode($out) };
    return $v // { ok => JSON::PP::false, error => "node: $out" };
}
sub query_of { my ($url) = @_; my ($q) = $url =~ /\?([^#]*)/; my %p; for (split /&/, $q // '') { my ($k, $v) = split /=/, $_, 2; $p{uri_unescape($k)} = uri_unescape(($v // '') =~ tr/+/ /r) } \%p }
sub path_of { my ($url) = @_; $url =~ s{^\Q$origin\E}{}; $url }
sub location { $_[0]{headers}{location} // '' }
sub basic { 'Basic ' . encode_base64("$_[0]:$_[1]", '') }
sub token_req {
    my (%o) = @_;
    my $auth = delete $o{auth};
    my $body = join '&', map { "$_=" . uri_escape($o{$_}) } sort keys %o;
    return $t->req(POST => '/auth/oauth2/token', body => $body,
        headers => { 'content-type' => 'application/x-www-form-urlencoded', ($auth ? (authorization => $auth) : ()) });
}
sub userinfo { $t->req(GET => '/auth/oauth2/userinfo', headers => { authorization => "Bearer $_[0]" }) }
sub pkce { my $v = encode_base64url(join '', map { chr int rand 256 } 1 .. 32); ($v, encode_base64url(sha256($v))) }

# ---------------------------------------------------------------- the whole flow with openid-client
my $start = rp(step => 'start', client_id => 'wiki', client_secret => $secret, redirect_uri => $wiki_cb);
ok $start->{url}, 'openid-client discovers the provider and writes the authorization request' or diag explain $start;
like $start->{url}, qr{^\Q$issuer\E/oauth2/authorize\?}, '... to the discovered authorization endpoint';
my $authorize = path_of($start->{url});

# nobody signed in: the sign-in page, which comes back here afterwards
my $r = $t->req(GET => $authorize);
is $r->{status}, 302, 'authorize without a session: a redirect';
my $signin = location($r);
like $signin, qr{^\Q$origin\E/auth/\?return_to=}, '... to the sign-in page';
my $back = query_of($signin)->{return_to};
like $back, qr{^/auth/oauth2/authorize\?.*client_id=wiki}, '... which returns to this authorization request';

# the person signs in with the link emailed to them (as the sign-in page does)
my ($cookie, $user) = $t->sign_in('alice@example.com');
my $uid = $user->{user}{id} // $user->{id};
ok $uid, 'signed in by an emailed link';

# back at authorize: the consent page
$r = $t->req(GET => $back, headers => { cookie => $cookie });
is $r->{status}, 200, 'back at authorize, signed in: the consent page';
like $r->{content}, qr{wiki}, '... names the application';
like $r->{content}, qr{alice\@example\.com}, '... and the account';
like $r->{headers}{'content-security-policy'} // '', qr{frame-ancestors 'none'}, '... and may not be framed';
my ($query) = $r->{content} =~ /name="query" value="([^"]*)"/;
ok defined $query, '... with a form that carries the request';
like $r->{content}, qr{<html lang="en" dir="ltr">}, '... in English, the first of signin_languages';

# the page in the visitor's language, as the sign-in pages pick it
my $de = $t->req(GET => $back, headers => { cookie => $cookie, 'accept-language' => 'de-CH, de;q=0.9, en;q=0.5' });
is $de->{status}, 200, 'a browser asking for German: the consent page';
like $de->{content}, qr{<html lang="de" dir="ltr">}, '... in German';
like $de->{content}, qr{wiki möchte Sie anmelden}, '... its words';
like $de->{content}, qr{>Erlauben</button>}, '... and its buttons';
is $de->{headers}{'content-language'}, 'de', '... saying so in Content-Language';
like $de->{headers}{vary} // '', qr{Accept-Language}, '... and varying by it';
my $xx = $t->req(GET => $back, headers => { cookie => $cookie, 'accept-language' => 'tlh, xx-YY;q=0.8' });
like $xx->{content}, qr{<html lang="en" dir="ltr">.*asks to sign you in}s, 'an unsupported language: the default, English';
my $ar = $t->req(GET => $back, headers => { cookie => $cookie, 'accept-language' => 'ar' });
like $ar->{content}, qr{<html lang="ar" dir="rtl">}, 'Arabic: the page is right to left';
$query =~ s/&amp;/&/g; $query =~ s/&quot;/"/g; $query =~ s/&#39;/'/g; $query =~ s/&lt;/</g; $query =~ s/&gt;/>/g;
my $form = 'decision=allow&query=' . uri_escape($query);
my $form_h = { 'content-type' => 'application/x-www-form-urlencoded', cookie => $cookie };

$r = $t->req(POST => '/auth/oauth2/authorize', body => $form, headers => { %$form_h, origin => 'http://evil.example' });
is $r->{status}, 403, 'a consent form from another origin is refused';
$r = $t->req(POST => '/auth/oauth2/authorize', body => $form, headers => { %$form_h, origin => $origin });
is $r->{status}, 302, 'the person allows: a redirect';
my $callback = location($r);
like $callback, qr{^\Q$wiki_cb\E\?code=}, '... to the client with a code';
is query_of($callback)->{state}, $start->{state}, '... its state';
is query_of($callback)->{iss}, $issuer, '... and the issuer (RFC 9207)';

my $done = rp(step => 'finish', client_id => 'wiki', client_secret => $secret, redirect_uri => $wiki_cb,
    callback => $callback, map { $_ => $start->{$_} } qw(verifier state nonce));
ok $done->{ok}, 'openid-client exchanges the code and verifies the ID token against the JWKS' or diag explain $done;
is $done->{claims}{sub}, $uid, 'the ID token names the account';
is $done->{claims}{aud}, 'wiki', '... for the client';
is $done->{claims}{nonce}, $start->{nonce}, '... with the nonce';
is $done->{claims}{email}, 'alice@example.com', '... and the address (scope email)';
ok $done->{claims}{auth_time}, '... and when the person signed in';
is_deeply $done->{claims}{amr}, ['otp'], '... and how (an emailed link: otp)';
is $done->{userinfo}{sub}, $uid, 'openid-client reads the userinfo';
is $done->{userinfo}{email}, 'alice@example.com', '... with the address';
ok !$done->{refresh_token}, 'no refresh token without offline_access';

# the consent is kept: the next request goes straight back with a code
$r = $t->req(GET => $authorize, headers => { cookie => $cookie });
is $r->{status}, 302, 'a second request after consent: no page';
like location($r), qr{^\Q$wiki_cb\E\?code=}, '... a code at once';

# ---------------------------------------------------------------- a second relying party: oauthlib and PyJWT
SKIP: {
    my $py = SigninTest::python_with('oauthlib') && SigninTest::python_with('jwt');
    skip 'needs python3-oauthlib and python3-jwt', 6 unless $py;
    my $rp2 = sub {
        my $file = "$dir/rp2.json";
        open my $f, '>', $file or die; print $f $JSON->encode({ issuer => $issuer, @_ }); close $f;
        my $root = $ENV{SIGNIN_ROOT} || '.';
        my $out = `timeout 60 $py $root/t/tools/oidc_rp.py $file 2>&1`;
        return eval { $JSON->decode($out) } // { ok => JSON::PP::false, error => "python: $out" };
    };
    my %c = (client_id => 'wiki', client_secret => $secret, redirect_uri => $wiki_cb);
    my $s2 = $rp2->(step => 'start', %c);
    like $s2->{url} // '', qr{^\Q$issuer\E/oauth2/authorize\?}, 'oauthlib writes the authorization request' or diag explain $s2;
    $r = $t->req(GET => path_of($s2->{url}), headers => { cookie => $cookie });
    like location($r), qr{^\Q$wiki_cb\E\?code=}, '... and gets a code (consent kept)';
    my $d2 = $rp2->(step => 'finish', %c, callback => location($r), map { $_ => $s2->{$_} } qw(verifier state nonce));
    ok $d2->{ok}, 'oauthlib exchanges the code and PyJWT verifies the ID token' or diag explain $d2;
    is $d2->{claims}{sub}, $uid, '... which names the account';
    is $d2->{claims}{email}, 'alice@example.com', '... with its address';
    is $d2->{userinfo}{sub}, $uid, '... and the userinfo agrees';
}

# ---------------------------------------------------------------- code reuse
my $code = query_of($callback)->{code};
$r = token_req(grant_type => 'authorization_code', code => $code, redirect_uri => $wiki_cb,
    code_verifier => $start->{verifier}, auth => basic('wiki', $secret));
is $r->{status}, 400, 'the code a second time: refused';
is $r->{json}{error}, 'invalid_grant', '... invalid_grant';
is userinfo($done->{access_token})->{status}, 401, '... and the access token it gave stops working';

# ---------------------------------------------------------------- refusals
my ($v, $c) = pkce();
my $cli = "/auth/oauth2/authorize?response_type=code&client_id=cli&redirect_uri=" . uri_escape($cli_cb) .
          "&scope=openid&state=s1&code_challenge=$c&code_challenge_method=S256";

$r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=cli&redirect_uri=" .
             uri_escape('http://127.0.0.1:9/evil') . "&scope=openid&code_challenge=$c&code_challenge_method=S256");
is $r->{status}, 400, 'a redirect URI not registered: refused';
ok !$r->{headers}{location}, '... on a page, never a redirect';
$r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=nobody&redirect_uri=" . uri_escape($cli_cb) . "&scope=openid");
is $r->{status}, 400, 'an unknown client: a page too';
$r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=nobody&redirect_uri=" . uri_escape($cli_cb) . "&scope=openid",
             headers => { 'accept-language' => 'de' });
like $r->{content}, qr{Diese Anwendung ist hier nicht bekannt\.}, '... in the visitor\'s language';
ok !$r->{headers}{location}, '... no redirect';

$r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=cli&redirect_uri=" . uri_escape($cli_cb) . "&scope=openid&state=s0",
             headers => { cookie => $cookie });
is $r->{status}, 302, 'a public client without PKCE';
is query_of(location($r))->{error}, 'invalid_request', '... is refused to its redirect URI';
is query_of(location($r))->{state}, 's0', '... with its state';

$r = $t->req(GET => "$cli&prompt=none");
is query_of(location($r))->{error}, 'login_required', 'prompt=none with nobody signed in: login_required to the client';

# the public client (consent=off): a code at once
my $cli_code = sub { my $r = $t->req(GET => $cli, headers => { cookie => $cookie }); query_of(location($r))->{code} };
my $k = $cli_code->();
ok $k, 'the public client gets a code for the signed-in person';
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, client_id => 'cli',
    code_verifier => (pkce())[0]);
is $r->{json}{error}, 'invalid_grant', 'a wrong PKCE verifier: invalid_grant';
$k = $cli_code->();
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, client_id => 'cli');
is $r->{json}{error}, 'invalid_grant', 'no verifier for a code with a challenge (downgrade): invalid_grant';
$k = $cli_code->();
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, code_verifier => $v,
    auth => basic('wiki', $secret));
is $r->{json}{error}, 'invalid_grant', 'the public client\'s code taken to another client: invalid_grant';
$k = $cli_code->();
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, client_id => 'cli', code_verifier => $v);
is $r->{status}, 200, 'the right verifier: tokens' or diag $r->{content};
is userinfo($r->{json}{access_token})->{json}{sub}, $uid, '... whose access token reads the userinfo';

# ---------------------------------------------------------------- refresh tokens and revocation
my $off = "$cli&scope=openid+offline_access";
$off =~ s/&scope=openid&/&/;
$k = query_of(location($t->req(GET => $off, headers => { cookie => $cookie })))->{code};
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, client_id => 'cli', code_verifier => $v);
my $refresh1 = $r->{json}{refresh_token};
ok $refresh1, 'offline_access: a refresh token' or diag $r->{content};
$r = token_req(grant_type => 'refresh_token', refresh_token => $refresh1, client_id => 'cli');
is $r->{status}, 200, 'the refresh token: new tokens' or diag $r->{content};
my $refresh2 = $r->{json}{refresh_token};
my $access2 = $r->{json}{access_token};
isnt $refresh2, $refresh1, '... and a new refresh token (rotated)';
is userinfo($access2)->{status}, 200, '... whose access token works';
$r = token_req(grant_type => 'refresh_token', refresh_token => $refresh1, client_id => 'cli');
is $r->{json}{error}, 'invalid_grant', 'the old refresh token again: refused';
is token_req(grant_type => 'refresh_token', refresh_token => $refresh2, client_id => 'cli')->{json}{error}, 'invalid_grant',
    '... and the family is over: the newest refused too';
is userinfo($access2)->{status}, 401, '... and its access token with it';

$k = $cli_code->();
$r = token_req(grant_type => 'authorization_code', code => $k, redirect_uri => $cli_cb, client_id => 'cli', code_verifier => $v);
my $access3 = $r->{json}{access_token};
$r = $t->req(POST => '/auth/oauth2/revoke', body => "client_id=cli&token=$access3",
    headers => { 'content-type' => 'application/x-www-form-urlencoded' });
is $r->{status}, 200, 'POST oauth2/revoke: 200';
is userinfo($access3)->{status}, 401, '... and the access token is over';

# ---------------------------------------------------------------- who may use which client
(my $acme = $cli) =~ s/client_id=cli/client_id=acme/;
$r = $t->req(GET => $acme, headers => { cookie => $cookie });
is query_of(location($r))->{error}, 'access_denied', 'a client whose allow= leaves the person out: access_denied';

# require=mfa: a sign-in without a second factor is sent to sign in again, and one made since
# that still has none is refused
(my $ops = $cli) =~ s/client_id=cli/client_id=ops/;
$r = $t->req(GET => $ops, headers => { cookie => $cookie });
like location($r), qr{^\Q$origin\E/auth/\?add=1&return_to=}, 'require=mfa, signed in without a factor: the sign-in page';
my $mfa_back = query_of(location($r))->{return_to};
my $cookie_nf = $t->sign_in('alice@example.com');
$r = $t->req(GET => $mfa_back, headers => { cookie => $cookie_nf });
is query_of(location($r))->{error}, 'access_denied', '... and a new sign-in still without one: access_denied';
$cookie = $cookie_nf;
SKIP: {
    skip 'no oathtool (build.sh installs Debian\'s oathtool)', 1 unless SigninTest::which('oathtool');
    my ($cookie_mfa) = $t->mfa_enrolled('bob@example.com');
    $r = $t->req(GET => $ops, headers => { cookie => $cookie_mfa });
    like location($r), qr{^\Q$cli_cb\E\?code=}, 'require=mfa, a sign-in that passed a second factor: the code';
}

# ---------------------------------------------------------------- prompt=login
$r = $t->req(GET => "$cli&prompt=login", headers => { cookie => $cookie });
like location($r), qr{^\Q$origin\E/auth/\?add=1&return_to=}, 'prompt=login while signed in: the sign-in page again';
$back = query_of(location($r))->{return_to};
$r = $t->req(GET => $back, headers => { cookie => $cookie });
like location($r), qr{^\Q$origin\E/auth/\?}, '... and the old session does not count as that sign-in';
my $cookie2 = $t->sign_in('alice@example.com');
$r = $t->req(GET => $back, headers => { cookie => $cookie2 });
like location($r), qr{^\Q$cli_cb\E\?code=}, '... a sign-in made since: the code';

$r = token_req(grant_type => 'authorization_code', code => 'x', redirect_uri => $cli_cb, client_id => 'wiki',
    client_secret => 'wrong-wrong-wrong-wrong-wrong-wrong');
is $r->{status}, 401, 'a wrong client secret: 401';
is $r->{json}{error}, 'invalid_client', '... invalid_client';
$r = $t->req(POST => '/auth/oauth2/token', json => { grant_type => 'authorization_code' });
is $r->{status}, 415, 'the token endpoint takes form bodies only';
is userinfo('not-a-token')->{status}, 401, 'userinfo with an unknown token: 401';
like userinfo('not-a-token')->{headers}{'www-authenticate'} // '', qr{^Bearer error="invalid_token"}, '... with the challenge';

# prompt=login and prompt=consent together: the sign-in, then the consent page, then the code
($v, $c) = pkce();
$r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=wiki&redirect_uri=" . uri_escape($wiki_cb) .
             "&scope=openid&state=s9&code_challenge=$c&code_challenge_method=S256&prompt=login+consent", headers => { cookie => $cookie2 });
$back = query_of(location($r))->{return_to};
ok $back, 'prompt=login consent: the sign-in page first';
my $cookie3 = $t->sign_in('alice@example.com');
$r = $t->req(GET => $back, headers => { cookie => $cookie3 });
is $r->{status}, 200, '... then the consent page, though consent was given before';
($query) = $r->{content} =~ /name="query" value="([^"]*)"/;
$query =~ s/&amp;/&/g;
$r = $t->req(POST => '/auth/oauth2/authorize', body => 'decision=allow&query=' . uri_escape($query),
    headers => { 'content-type' => 'application/x-www-form-urlencoded', cookie => $cookie3, origin => $origin });
like location($r), qr{^\Q$wiki_cb\E\?code=}, '... then the code: the new sign-in still counts after the consent';
$cookie2 = $cookie3;

# ---------------------------------------------------------------- RP-initiated logout
my $me = sub { $t->req(GET => '/auth/me', headers => { cookie => $_[0] })->{status} };
is $me->($cookie2), 200, 'signed in before end_session';
my $hint = $done->{id_token};
$r = $t->req(GET => "/auth/oauth2/end_session?client_id=wiki&post_logout_redirect_uri=" . uri_escape('http://evil.example/') .
             "&id_token_hint=$hint");
is $r->{status}, 200, 'end_session never sends the browser to a URI the client did not register';
unlike location($r), qr{evil}, '... (the signed-out page instead)';
$r = $t->req(GET => "/auth/oauth2/end_session?post_logout_redirect_uri=" . uri_escape($wiki_bye) . "&state=bye1",
             headers => { cookie => $cookie2 });
is $r->{status}, 200, 'end_session without an id_token_hint: a question first';
like $r->{content}, qr{Sign out}, '... asking to sign out';
is $me->($cookie2), 200, '... and nobody is signed out yet';
$r = $t->req(GET => "/auth/oauth2/end_session?id_token_hint=$hint&post_logout_redirect_uri=" . uri_escape($wiki_bye) . "&state=bye2",
             headers => { cookie => $cookie2 });
is $r->{status}, 302, 'end_session with the ID token as hint: signed out at once';
is location($r), "$wiki_bye?state=bye2", '... and back to the registered post_logout_redirect_uri with the state';
is $me->($cookie2), 401, '... the session is over';

# ---------------------------------------------------------------- the metrics
my $metrics = $t->req(GET => '/metrics')->{content} // '';
my %oidc = $metrics =~ /^signin_oidc_provider_total\{outcome="(\w+)"\} (\d+)/mg;
cmp_ok $oidc{$_} // 0, '>', 0, "signin_metrics counts the provider's outcome $_" for qw(code granted refused reused revoked);

$t->done;
done_testing;
