# OpenID Connect providers (signin_provider) against a real provider: the npm
# oidc-provider (OpenID-certified) on loopback, started by t/tools/oidc_provider.mjs with a static
# client. Every call nginx makes to it goes through the signin_provider_fetch location. Its
# test controls choose who signs in next, tamper with the next ID token (re-signed with its own
# key where the defect is in the claims), answer the next authorization with an error, and count
# what nginx fetched.
use strict; use warnings;
use Test::More;
use Time::HiRes ();
use lib 't/lib'; use SigninTest;
use JSON::PP;

if (my $why = SigninTest::missing_node_packages('oidc-provider', 'jose')) { plan skip_all => $why }

my $t = SigninTest->new;
my $dir = $t->prefix;
my ($origin, $port2, $port3) = ($t->origin, $t->port2, $t->port3);
for (['idp.secret', "idp-secret-value\n"], ['other.secret', "other-secret-value\n"]) {
    open my $fh, '>', "$dir/$_->[0]" or die; print $fh $_->[1]; close $fh;
}
my $idp = SigninTest::Provider->new(port => $port2, keys => "$dir/idp-keys.json", client_id => 'nginx',
    secret => 'idp-secret-value', redirect => ["$origin/auth/providers/idp/callback"], log => "$dir/idp.log");
my $other = SigninTest::Provider->new(port => $port3, keys => "$dir/other-keys.json", client_id => 'nginx-2',
    secret => 'other-secret-value', redirect => ["$origin/auth/providers/other/callback"], alg => 'ES256',
    auth => 'basic', log => "$dir/other.log");

my $fetch = q{
        location = /_signin/provider {
            internal;
            proxy_pass $signin_provider_url;
            subrequest_output_buffer_size 64k;
        }};
my $providers = qq{
    signin_limits off;
    signin_provider idp issuer=http://127.0.0.1:$port2 client_id=nginx client_secret_file=$dir/idp.secret
                    "label=Test ID" trust_email=on;
    signin_provider other issuer=http://127.0.0.1:$port3 client_id=nginx-2 client_secret_file=$dir/other.secret
                    client_auth=basic;
    signin_provider_fetch /_signin/provider;
};
$t->run(main => "thread_pool default threads=4;\nerror_log %%PREFIX%%/debug.log debug;",
    http => $t->signin_http(extra => $providers, auth => 'signin_pages on;', locations => $fetch . q{
        location /app/ { signin_require on; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
        location /_legacy/ { default_type text/plain; return 200 "app: $http_x_user\n"; }
}));

my $http = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 0);

# name => value of every Set-Cookie of an answer
sub cookies {
    my ($r) = @_;
    my $sc = $r->{headers}{'set-cookie'} // [];
    my %c;
    for (ref $sc ? @$sc : $sc) { my ($n, $v) = /^([^=]+)=([^;]*)/ or next; $c{$n} = $v; }
    return \%c;
}

# One flow: start, the provider's redirects (it logs in as its "next" account, no page), and the
# callback with the flow's cookie. Returns {start, callback, path, flow_cookie, session}.
sub flow {
    my (%o) = @_;
    my $name = $o{provider} // 'idp';
    my $issuer = $name eq 'idp' ? $idp->issuer : $other->issuer;
    my %out;
    my @jar = grep { defined } $o{cookie};
    $out{start} = $t->req(GET => "/auth/providers/$name/start" . ($o{query} ? "?$o{query}" : ''),
        headers => { @jar ? (cookie => join '; ', @jar) : () });
    return \%out unless $out{start}{status} == 302;
    my $flow = cookies($out{start})->{svc_dev_oidc};
    $out{flow_cookie} = $flow;
    my $url = $out{start}{headers}{location};
    for (1 .. 10) {
        last if index($url, "$origin/") == 0;
        my $res = $http->get($url);
        $url = $res->{headers}{location} or do { $out{provider} = $res; return \%out };
        $url = "$issuer$url" if $url =~ m{^/};
    }
    ($out{path}) = $url =~ m{^\Q$origin\E(/.*)$};
    return \%out if $o{no_callback};
    my $jar = join '; ', grep { defined } ($o{flow_cookie} // "svc_dev_oidc=$flow"), $o{cookie};
    $out{callback} = $t->req(GET => $out{path}, headers => { cookie => $jar });
    my $c = cookies($out{callback});
    $out{session} = "svc_dev_session=$c->{svc_dev_session}" if $c->{svc_dev_session};
    return \%out;
}

sub me {
    my ($cookie) = @_;
    return $t->req(GET => '/auth/me', headers => { cookie => $cookie });
}

# ---------------------------------------------------------------- the list and the start
my $r = $t->req(GET => '/auth/providers');
is $r->{status}, 200, 'GET /providers';
is_deeply $r->{json}, { providers => [{ name => 'idp', label => 'Test ID' }, { name => 'other', label => 'other' }] },
    '... names and labels in configuration order';
is $t->req(GET => '/auth/providers/nope/start')->{status}, 404, 'an unknown provider: 404';
is $t->req(POST => '/auth/providers/idp/start', json => {})->{status}, 405, 'the flow is GET only';

$idp->control('log/clear');
my $f = flow(query => 'return_to=' . '%2Fapp%2Fhome%3Fx%3D1', no_callback => 1);
is $f->{start}{status}, 302, 'start: 302 to the provider';
my $auth = $f->{start}{headers}{location};
like $auth, qr{^http://127\.0\.0\.1:$port2/auth\?}, '... its authorization endpoint (from discovery)';
like $auth, qr/[?&]response_type=code(&|$)/, '... the code flow';
like $auth, qr/[?&]code_challenge=[A-Za-z0-9_-]{43}&code_challenge_method=S256/, '... PKCE S256';
like $auth, qr/[?&]state=[A-Za-z0-9_-]{43}/, '... a state';
like $auth, qr/[?&]nonce=[A-Za-z0-9_-]{43}/, '... a nonce';
(my $cb_encoded = "$origin/auth/providers/idp/callback") =~ s/([^A-Za-z0-9._~-])/sprintf '%%%02X', ord $1/ge;
like $auth, qr/[?&]redirect_uri=\Q$cb_encoded\E(&|$)/, '... the callback as redirect_uri';
my $sc = $f->{start}{headers}{'set-cookie'};
like $sc, qr/^svc_dev_oidc=[^;]+; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=600$/, '... the flow cookie: HttpOnly, Lax, 10 minutes';
my ($state) = $auth =~ /state=([^&]+)/;
unlike $sc, qr/\Q$state\E/, '... which does not show the state';
is_deeply [grep { !m{/interaction/|/auth} } $idp->requests], ['GET /.well-known/openid-configuration'],
    '... discovery fetched through nginx';

# ---------------------------------------------------------------- a first sign-in makes an account
$idp->control(next => { sub => 'carol-sub', email => 'carol@example.com', email_verified => JSON::PP::true, name => 'Carol' });
$f = flow(query => 'return_to=%2Fapp%2Fhome');
is $f->{callback}{status}, 302, 'callback: 302';
is $f->{callback}{headers}{location}, "$origin/" . 'app/home', '... to return_to';
ok $f->{session}, '... with a session cookie';
like join(' ', @{ ref $f->{callback}{headers}{'set-cookie'} ? $f->{callback}{headers}{'set-cookie'} : [$f->{callback}{headers}{'set-cookie'}] }),
    qr/svc_dev_oidc=; .*Max-Age=0/, '... and the flow cookie cleared';
$r = me($f->{session});
is $r->{status}, 200, 'the session works';
is $r->{json}{email}, 'carol@example.com', '... the new account has the verified address';
my $carol = $r->{json}{id};
is $t->req(GET => '/app/x', headers => { cookie => $f->{session} })->{status}, 200, '... and passes the gate';
my @asked = $idp->requests;
is scalar(grep { $_ eq 'POST /token' } @asked), 1, 'one token request';
# Discovery and keys are kept per worker (two here; which one a connection meets is the kernel's
# choice), so each is fetched at most once per worker, however many flows go by.
cmp_ok scalar(grep { $_ eq 'GET /jwks' } @asked), '<=', 2, 'the keys fetched at most once per worker';
cmp_ok scalar(grep { m{openid-configuration} } @asked), '<=', 2, 'discovery kept (at most once per worker)';

$f = flow();
is me($f->{session})->{json}{id}, $carol, 'the same identity again: the same account';
is $f->{callback}{headers}{location}, "$origin/" . 'auth/', '... without return_to: the sign-in page';
cmp_ok scalar(grep { $_ eq 'GET /jwks' } $idp->requests), '<=', 2, '... the keys were kept';

$r = $t->req(GET => '/auth/account', headers => { cookie => $f->{session} });
is $r->{json}{providers}[0]{provider}, 'idp', 'GET /account lists the linked provider';
$r = $t->req(GET => '/auth/providers/linked', headers => { cookie => $f->{session} });
is scalar @{ $r->{json}{providers} }, 1, 'GET /providers/linked';
is $r->{json}{providers}[0]{email}, 'carol@example.com', '... with the address it gave';

# return_to is a path of this site only
$f = flow(query => 'return_to=https%3A%2F%2Fevil.example%2F');
is $f->{callback}{headers}{location}, "$origin/" . 'auth/', 'return_to to another site is dropped';
$f = flow(query => 'return_to=%2F%2Fevil.example%2F');
is $f->{callback}{headers}{location}, "$origin/" . 'auth/', '... and //host too';

# ---------------------------------------------------------------- addresses
my (undef, $dave_me) = $t->sign_in('dave@example.com');   # an account by email first
$idp->control(next => { sub => 'dave-at-idp', email => 'dave@example.com', email_verified => JSON::PP::false });
$f = flow();
is $f->{callback}{status}, 302, 'an unverified address with an account: refused';
like $f->{callback}{headers}{location}, qr{^\Q$origin\E/auth/\?provider_error=account_exists}, '... the sign-in page says why';
ok !$f->{session}, '... no session';
$idp->control(next => { sub => 'dave-at-idp', email => 'dave@example.com', email_verified => JSON::PP::true });
$f = flow();
is me($f->{session})->{json}{id}, $dave_me->{id}, 'a verified address of a trust_email provider: its account';

$other->control(next => { sub => 'dave-elsewhere', email => 'dave@example.com', email_verified => JSON::PP::true });
$f = flow(provider => 'other');
like $f->{callback}{headers}{location}, qr{provider_error=account_exists}, 'the same address verified by a provider without trust_email: refused';

$other->control(next => { sub => 'erin-sub', email => 'erin@example.com', email_verified => JSON::PP::true });
$f = flow(provider => 'other');
$r = me($f->{session});
is $r->{status}, 200, 'a second provider (ES256, client_secret_basic): signed in';
my $erin_id = $r->{json}{id};
ok !length($r->{json}{email} // ''), '... a new account, without the address: "verified" is the word of a provider without trust_email';
my $erin = $f->{session};
# ... so the address's owner signing in by email gets an account of their own (no pre-account
# hijacking), and the provider identity does not enter it afterwards
my (undef, $erin_me) = $t->sign_in('erin@example.com');
isnt $erin_me->{id}, $erin_id, "the address's owner signs in to another account";
$other->control(next => { sub => 'erin-sub', email => 'erin@example.com', email_verified => JSON::PP::true });
$f = flow(provider => 'other');
is me($f->{session})->{json}{id}, $erin_id, '... and the provider identity still enters only its own';

$idp->control(next => { sub => 'frank-sub', email => 'frank@example.com', email_verified => JSON::PP::false });
$f = flow();
$r = me($f->{session});
is $r->{json}{email}, undef, 'an unverified address is not the new account\'s (email null)';
# that account gets its first address by confirming it: one email, to the new address only
my $frank = $f->{session};
$r = $t->req(POST => '/auth/email/change', json => { email => 'frank@example.com' },
    headers => { cookie => $frank, origin => $origin });
is $r->{status}, 202, 'an account without an address asks for one';
my $confirm = $t->last_email('frank@example.com', purpose => 'EmailChange');
ok $confirm, '... the new address gets the confirmation';
ok !(grep { ($_->{email} // '') eq '' } $t->mailbox), '... and nothing is sent to an empty address';
$r = $t->req(POST => '/auth/email/confirm', json => { token => $confirm->{token} });
is $r->{status}, 200, '... confirmed';
is $r->{json}{status}, 'changed', '... by the new address alone (there is no old one to approve)';
is me($frank)->{json}{email}, 'frank@example.com', '... and the account has it';

# ---------------------------------------------------------------- each defect of an ID token
$idp->control(next => { sub => 'carol-sub', email => 'carol@example.com', email_verified => JSON::PP::true });
my $kid_refetched = 0;  # when a token with a key nginx did not know last made a worker fetch the keys
for my $mode (qw(aud iss expired future_iat nonce no_nonce signature other_key unknown_kid alg_none hs256)) {
    $idp->control(tamper => { mode => $mode });
    $f = flow();
    $kid_refetched = Time::HiRes::time() if $mode eq 'other_key' || $mode eq 'unknown_kid';
    like $f->{callback}{headers}{location} // '', qr{^\Q$origin\E/auth/\?provider_error=provider_failed}, "a tampered ID token ($mode): refused";
    ok !$f->{session}, "... ($mode) no session";
}
$f = flow();
is me($f->{session})->{json}{id}, $carol, 'the next honest token signs in again';
$t->allow_log(qr/sign-in refused: id token/);

# the audit says why each was refused
my ($rc, $audit) = $t->admin('audit', 200);
for my $why (qw(audience issuer expired issued_at nonce signature unknown_key algorithm)) {
    like $audit, qr/provider\.refused[^\n]*id token: $why|id token: $why[^\n]*provider\.refused/, "audit: refused for $why";
}

# ---------------------------------------------------------------- state, replays, errors
$f = flow(no_callback => 1);
my $before = grep { $_ eq 'POST /token' } $idp->requests;
$r = $t->req(GET => $f->{path} =~ s/state=[^&]+/state=forged/r, headers => { cookie => "svc_dev_oidc=$f->{flow_cookie}" });
like $r->{headers}{location}, qr{provider_error=expired}, 'a state that is not the cookie\'s: refused';
is scalar(grep { $_ eq 'POST /token' } $idp->requests), $before, '... before any call to the provider';
$r = $t->req(GET => $f->{path});
like $r->{headers}{location}, qr{provider_error=expired}, 'a callback without the flow cookie (another browser): refused';
$r = $t->req(GET => $f->{path}, headers => { cookie => "svc_dev_oidc=$f->{flow_cookie}" });
is $r->{status}, 302, 'the right browser';
ok cookies($r)->{svc_dev_session}, '... signs in';
$r = $t->req(GET => $f->{path}, headers => { cookie => "svc_dev_oidc=$f->{flow_cookie}" });
like $r->{headers}{location}, qr{provider_error=provider_failed}, 'the same callback replayed: refused';
ok !cookies($r)->{svc_dev_session}, '... no session';
$t->allow_log(qr/sign-in refused: token/);

$idp->control(error => { error => 'access_denied', error_description => 'user cancelled' });
$f = flow(query => 'return_to=%2Fapp%2F');
like $f->{callback}{headers}{location}, qr{^\Q$origin\E/auth/\?provider_error=cancelled&return_to=/app/$}, 'error=access_denied: the sign-in page, return_to kept';
$idp->control(error => { error => 'server_error' });
$f = flow();
like $f->{callback}{headers}{location}, qr{provider_error=provider_error}, 'another error: said so';

$r = $t->req(GET => "/auth/providers/idp/callback?code=x&state=y&iss=http%3A%2F%2Fevil", headers => { cookie => "svc_dev_oidc=$f->{flow_cookie}" });
like $r->{headers}{location}, qr{provider_error}, 'a callback naming another issuer (RFC 9207): refused';

my @all = $idp->requests;
my $flows = grep { $_ eq 'POST /token' } @all;
cmp_ok $flows, '>=', 8, "$flows flows since the log was cleared";
cmp_ok scalar(grep { m{openid-configuration} } @all), '<=', 2, '... discovery fetched at most once per worker for all of them';

# ---------------------------------------------------------------- key rotation
# An unknown key fetches the keys again at most every 10 s per worker: the tampered tokens above
# used theirs. Wait that out, or the rotation below would be refused by a worker that just did.
{
    my $left = $kid_refetched + 10.5 - Time::HiRes::time();
    Time::HiRes::sleep($left) if $left > 0;
}
$idp->stop;
unlink "$dir/idp-keys.json";
$idp = SigninTest::Provider->new(port => $port2, keys => "$dir/idp-keys.json", client_id => 'nginx',
    secret => 'idp-secret-value', redirect => ["$origin/auth/providers/idp/callback"], log => "$dir/idp.log");
$idp->control(next => { sub => 'carol-sub', email => 'carol@example.com', email_verified => JSON::PP::true });
$f = flow();
is me($f->{session})->{json}{id}, $carol, 'after the provider rotated its keys (old kid gone): signed in';
is scalar(grep { $_ eq 'GET /jwks' } $idp->requests), 1, '... the new keys fetched on the unknown kid';

# ---------------------------------------------------------------- linking and unlinking
$other->control(next => { sub => 'carol-elsewhere', email => 'carol@other.example', email_verified => JSON::PP::true });
is $t->req(GET => '/auth/providers/other/start?link=1')->{status}, 401, 'linking needs a session';
my $g = flow(provider => 'other', query => 'link=1', cookie => $f->{session});
is $g->{callback}{headers}{location}, "$origin/" . 'auth/account?provider_linked=other', 'linking from the account: back to it';
$r = $t->req(GET => '/auth/providers/linked', headers => { cookie => $f->{session} });
my @links = @{ $r->{json}{providers} };
is_deeply [sort map { $_->{provider} } @links], ['idp', 'other'], '... both providers linked';
my (undef, $shown) = $t->admin_text('user', 'carol@example.com');
like $shown, qr/providers\s+(idp,other|other,idp)/, 'signin-admin user shows the linked providers';
my (undef, $stats) = $t->admin('stats');
ok decode_json($stats)->{provider_links} >= 5, 'signin-admin stats counts provider links';
$g = flow(provider => 'other');
is me($g->{session})->{json}{id}, $carol, '... and the linked one signs in to the account';
$g = flow(provider => 'other', query => 'link=1', cookie => $erin);
like $g->{callback}{headers}{location}, qr{^\Q$origin\E/auth/account\?provider_error=account_exists}, 'an identity of another account is not linked';

my ($link) = grep { $_->{provider} eq 'other' } @links;
$r = $t->req(POST => '/auth/providers/unlink', json => { id => $link->{id} }, headers => { cookie => $f->{session}, origin => $origin });
is $r->{status}, 204, 'unlink: 204';
$r = $t->req(POST => '/auth/providers/unlink', json => { id => $link->{id} }, headers => { cookie => $f->{session}, origin => $origin });
is $r->{status}, 404, '... once';
$r = $t->req(POST => '/auth/providers/unlink', json => { id => $link->{id} }, headers => { cookie => $f->{session} });
is $r->{status}, 403, '... a cookie write: Origin required';

# ---------------------------------------------------------------- secrets in the logs
my $debug = do { local $/; open my $fh, '<', "$dir/debug.log" or die; <$fh> };
like $debug, qr/http proxy header/, 'the debug log shows the proxied provider calls';
unlike $debug, qr/idp-secret-value/, '... never the client secret (client_secret_post)';
unlike $debug, qr/code_verifier=/, '... nor the token request body';
unlike $debug, qr/"id_token"|eyJ[A-Za-z0-9_-]{20,}\.eyJ/, '... nor an ID token';
$t->allow_log(qr/provider "\w+": the fetch through|answered "|callback without its flow|another issuer/);
$t->done(allow => qr/\[warn\].*signin: provider/);
$idp->stop;

# ---------------------------------------------------------------- providers only
my $t2 = SigninTest->new;
my $o2 = $t2->origin;
open my $fh, '>', $t2->prefix . '/idp.secret' or die; print $fh "idp-secret-value\n"; close $fh;
my $idp2 = SigninTest::Provider->new(port => $t2->port2, keys => $t2->prefix . '/keys.json', client_id => 'nginx',
    secret => 'idp-secret-value', redirect => ["$o2/auth/providers/idp/callback"]);
$t2->run(http => qq{
    signin_store %%STORE%%;
    signin_origin $o2;
    signin_registration on;
    signin_email off;
    signin_mfa on;
    signin_limits off;
    signin_provider idp issuer=http://127.0.0.1:%%PORT2%% client_id=nginx client_secret_file=%%PREFIX%%/idp.secret;
    signin_provider_fetch /_signin/provider;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        $fetch
    }
});
($t, $idp, $origin) = ($t2, $idp2, $o2);
$r = $t2->req(POST => '/auth/login', json => { email => 'a@example.com' });
is $r->{status}, 403, 'signin_email off: the email endpoints answer 403';
is $r->{json}{code}, 'email_disabled', '... email_disabled';
$idp2->control(next => { sub => 'only-sub', email => JSON::PP::null });
$f = flow();
is $f->{callback}{status}, 302, 'providers only, without signin_pages: signed in';
is $f->{callback}{headers}{location}, "$origin/" . '', '... to /';
$r = me($f->{session});
is $r->{json}{email}, undef, '... an account without an address';
$r = $t2->req(GET => '/auth/providers/linked', headers => { cookie => $f->{session} });
$r = $t2->req(POST => '/auth/providers/unlink', json => { id => $r->{json}{providers}[0]{id} },
    headers => { cookie => $f->{session}, origin => $o2 });
is $r->{status}, 409, 'unlinking the only way in: 409';
is $r->{json}{code}, 'last_way_in', '... last_way_in';
# a provider's sign-in is fresh (the only proof there is on such a site): a second factor can be
# added, and then it applies after the provider like after any other way in
my $oathtool = SigninTest::which('oathtool');
SKIP: {
    skip 'no oathtool (build.sh installs Debian\'s oathtool)', 5 unless $oathtool;
    my $post = sub { $t2->req(POST => "/auth/$_[0]", json => $_[1], headers => { origin => $o2, $_[2] ? (cookie => $_[2]) : () }) };
    $r = $post->('mfa/totp/setup', {}, $f->{session});
    is $r->{status}, 200, 'a fresh provider session sets up TOTP';
    my $secret = $r->{json}{secret};
    # a step's code is taken once: the second one is the next step's (accepted one step ahead)
    my $code = sub { my $at = time + ($_[0] // 0); my $c = `$oathtool --totp -b -N \@$at $secret 2>&1`; chomp $c; $c };
    is $post->('mfa/totp/confirm', { code => $code->() }, $f->{session})->{status}, 200, '... and confirms it (oathtool)';
    $f = flow();
    is $f->{callback}{status}, 202, 'the next provider sign-in stops at the second factor';
    ok !$f->{session}, '... without a session';
    $r = $post->('mfa/verify', { mfa_token => $f->{callback}{json}{mfa_token}, code => $code->(30) });
    is $r->{status}, 200, '... which the code finishes';
}
$idp2->control(tamper => { mode => 'aud' });
$f = flow();
is $f->{callback}{status}, 401, 'without signin_pages a refusal is the JSON error';
is $f->{callback}{json}{code}, 'provider_refused', '... provider_refused';
$t2->done(allow => qr/sign-in refused/);
$idp2->stop;

# ---------------------------------------------------------------- nginx -t
my $t3 = SigninTest->new;
open $fh, '>', $t3->prefix . '/s' or die; print $fh "x\n"; close $fh;
open $fh, '>', $t3->prefix . '/empty' or die; close $fh;
my $base = q{signin_store %%STORE%%; signin_origin http://127.0.0.1:%%PORT%%; signin_email off;
    server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } LOCATIONS } };
for my $case (
    ['signin_provider g issuer=https://accounts.google.com client_id=c client_secret_file=%%PREFIX%%/s;', '',
        qr/signin_provider needs "signin_provider_fetch"/, 'no fetch location'],
    ['signin_provider g issuer=https://accounts.google.com client_id=c client_secret_file=%%PREFIX%%/s; signin_provider_fetch /_p;', '',
        qr/signin_provider_fetch "\/_p" matches no exact or prefix location/, 'a fetch URI no location serves'],
    ['signin_provider G issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/s;', '', qr/a provider's name is/, 'a bad name'],
    ['signin_provider g issuer=http://a.example client_id=c client_secret_file=%%PREFIX%%/s;', '', qr/issuer= must be an https URL/, 'an http issuer off loopback'],
    ['signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/empty;', '', qr/client_secret_file is empty/, 'an empty secret'],
    ['signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/none;', '', qr/cannot read/, 'a missing secret file'],
    ['signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/s scope=email;', '', qr/scope= must hold "openid"/, 'a scope without openid'],
    ['signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/s trust_email=yes;', '', qr/invalid parameter "trust_email=yes"/, 'trust_email=yes'],
    ['signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/s; signin_provider g issuer=https://b.example client_id=c client_secret_file=%%PREFIX%%/s;', '', qr/is duplicate/, 'a name twice'],
) {
    my ($http_extra, $loc, $want, $name) = @$case;
    my ($st, $out) = $t3->nginx_t(http => $http_extra . ($base =~ s/LOCATIONS/$loc/r));
    isnt $st, 0, "nginx -t refuses $name";
    like $out, $want, '... and says why';
}
my ($st, $out) = $t3->nginx_t(http => 'signin_provider g issuer=https://a.example client_id=c client_secret_file=%%PREFIX%%/s; signin_provider_fetch /_p;'
    . ($base =~ s/LOCATIONS/location = \/_p { proxy_pass \$signin_provider_url; }/r));
is $st, 0, 'nginx -t takes a fetch location';
like $out, qr/"\/_p" is not "internal"/, '... and warns when it is not internal';
like $out, qr/subrequest_output_buffer_size 64k/, '... or keeps too little of an answer';

# the README's configuration for Google and Keycloak (examples/providers.conf) passes nginx -t
{
    my $root = $ENV{SIGNIN_ROOT} || '.';
    my $example = do { local $/; open my $in, '<', "$root/examples/providers.conf" or die "$!"; <$in> };
    for my $name (qw(google keycloak)) {
        open my $out, '>', $t3->prefix . "/$name.secret" or die; print $out "s3cret\n"; close $out;
    }
    my $p = $t3->prefix;
    $example =~ s{/etc/nginx/signin/}{$p/}g;
    my ($st, $out) = $t3->nginx_t(http => "signin_store %%STORE%%; signin_origin https://app.example.com; signin_email off;\nsignin_limits zone=signin:1m;\n$example");
    is $st, 0, 'examples/providers.conf (Google, Keycloak) passes nginx -t' or diag $out;
    unlike $out, qr/\[warn\]/, '... without a warning' or diag $out;
}

done_testing;
