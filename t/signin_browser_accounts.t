# Several accounts in one browser over HTTP (issue #16): POST /session {add: true}
# signs another account in and keeps the first; GET /accounts lists this browser's; POST
# /accounts/switch makes another the active one (its cookie set) only for the browser that made
# it; a sign-in without add replaces the active session; POST /logout ends the active one, {all:
# true} every one of this browser; signin_browser_accounts bounds them; the gate sees the active
# account; the browser cookie never reaches the upstream; two session cookies are still refused.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_limits off; signin_passwords on; signin_mfa on; signin_browser_accounts 3;},
    locations => q{
        location /app/ {
            signin_require on;
            proxy_set_header X-User $signin_user_email;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
    },
    servers => q{
        server {
            listen 127.0.0.1:%%PORT2%%;
            location / { return 200 "user=[$http_x_user] cookie=[$http_cookie]\n"; }
        }
    },
), wait_ports => [$t->port, $t->port2]);
my $O = { origin => $t->origin };

# A browser: a cookie jar kept from every answer's Set-Cookie.
sub browser { return { jar => {} } }
sub set_cookies { my ($r) = @_; my $sc = $r->{headers}{'set-cookie'} // []; return ref $sc ? @$sc : ($sc) }
sub keep {
    my ($b, $r) = @_;
    for (set_cookies($r)) {
        my ($n, $v) = /^([^=]+)=([^;]*)/ or next;
        if (/Max-Age=0\b/) { delete $b->{jar}{$n} } else { $b->{jar}{$n} = $v }
    }
    return $r;
}
sub cookie_line { my ($b) = @_; join '; ', map { "$_=$b->{jar}{$_}" } sort keys %{ $b->{jar} } }
sub breq {
    my ($b, $method, $path, %o) = @_;
    my %h = (%{ $o{headers} // {} });
    $h{cookie} = cookie_line($b) if %{ $b->{jar} };
    return keep($b, $t->req($method => $path, ($o{json} ? (json => $o{json}) : ()), headers => \%h));
}
sub enter {
    my ($b, $email, %o) = @_;
    my $token = $t->request_token($email);
    return breq($b, POST => '/auth/session', json => { token => $token, ($o{add} ? (add => JSON::PP::true) : ()) },
                headers => $O);
}
sub listed {
    my ($b) = @_;
    my $r = breq($b, GET => '/auth/accounts');
    return join ' ', map { $_->{user}{email} . ($_->{active} ? '*' : '') } @{ $r->{json}{accounts} // [] };
}
sub id_of { my ($b, $email) = @_; my $r = breq($b, GET => '/auth/accounts'); (map { $_->{session_id} } grep { $_->{user}{email} eq $email } @{ $r->{json}{accounts} })[0] }
sub me { my ($b) = @_; my $r = breq($b, GET => '/auth/me'); $r->{status} == 200 ? $r->{json}{email} // $r->{json}{user}{email} : $r->{status} }

my $b = browser();
my $r = enter($b, 'ann@example.com');
is $r->{status}, 200, 'ann signs in';
my ($bc) = grep { /^svc_dev_browser=/ } set_cookies($r);
ok $bc, '... and the browser gets its browser cookie';
like $bc // '', qr/HttpOnly/, '... HttpOnly';
like $bc // '', qr/SameSite=Lax/, '... SameSite=Lax';
like $bc // '', qr/Path=\//, '... Path=/';
like $bc // '', qr/Max-Age=2592000/, '... as long-lived as a session can be';
my $ann_cookie = $b->{jar}{svc_dev_session};
my $browser_cookie = $b->{jar}{svc_dev_browser};

$r = enter($b, 'bob@example.com', add => 1);
is $r->{status}, 200, 'bob signs in with add: true';
isnt $b->{jar}{svc_dev_browser}, $browser_cookie, '... and the browser cookie is new (a new one at every sign-in: no fixation)';
{
    my $old = $t->req(GET => '/auth/accounts', headers => { cookie => "svc_dev_browser=$browser_cookie" });
    is scalar(@{ ($old->{json} || {})->{accounts} // [] }), 0, '... the old value names no account any more';
}
$browser_cookie = $b->{jar}{svc_dev_browser};
is listed($b), 'ann@example.com bob@example.com*', 'GET /accounts: both, bob active';
is me($b), 'bob@example.com', 'GET /me is the active account';
is $t->req(GET => '/auth/me', headers => { cookie => "svc_dev_session=$ann_cookie" })->{status}, 200,
    "ann's session is still live";
like breq($b, GET => '/app/')->{content}, qr/user=\[bob\@example\.com\]/, 'the gate passes the active account';
unlike breq($b, GET => '/app/')->{content}, qr/\Q$browser_cookie\E/, '... and never the browser cookie';

# switching
my $ann = id_of($b, 'ann@example.com');
$r = breq($b, POST => '/auth/accounts/switch', json => { session_id => $ann });
is $r->{status}, 403, 'a switch without Origin: 403 (it writes the session cookie)';
$r = breq($b, POST => '/auth/accounts/switch', json => { session_id => $ann }, headers => { origin => 'https://evil.example' });
is $r->{status}, 403, '... with a foreign Origin: 403';
$r = breq($b, POST => '/auth/accounts/switch', json => { session_id => $ann }, headers => $O);
is $r->{status}, 204, 'switch to ann: 204';
is $b->{jar}{svc_dev_session}, $ann_cookie, "... the session cookie is ann's again (no new session)";
is me($b), 'ann@example.com', '... GET /me is ann';
like breq($b, GET => '/app/')->{content}, qr/user=\[ann\@example\.com\]/, '... and so is the gate';
is listed($b), 'ann@example.com* bob@example.com', '... and the list says so';

# another browser cannot switch to this browser's sessions
my $other = browser();
enter($other, 'eve@example.com');
my $bob = id_of($b, 'bob@example.com');
$r = breq($other, POST => '/auth/accounts/switch', json => { session_id => $bob }, headers => $O);
is $r->{status}, 404, "another browser cannot switch to bob's session: 404";
is $r->{json}{code}, 'not_found', '... not_found';
is me($other), 'eve@example.com', '... and stays as it was';
my $thief = { jar => { svc_dev_session => $b->{jar}{svc_dev_session}, svc_dev_browser => $other->{jar}{svc_dev_browser} } };
is breq($thief, POST => '/auth/accounts/switch', json => { session_id => $bob }, headers => $O)->{status}, 404,
    '... not even holding one of its session cookies';
is breq($b, POST => '/auth/accounts/switch', json => { session_id => id_of($other, 'eve@example.com') }, headers => $O)->{status}, 404,
    "nor can this one switch to the other's";
is listed($other), 'eve@example.com*', 'each browser lists its own';

# the cookie-tossing rule still holds
my $bob_cookie = do { my $x = browser(); $x->{jar} = { %{ $b->{jar} } }; breq($x, POST => '/auth/accounts/switch', json => { session_id => $bob }, headers => $O); $x->{jar}{svc_dev_session} };
$r = $t->req(GET => '/auth/me', headers => { cookie => "svc_dev_session=$ann_cookie; svc_dev_session=$bob_cookie" });
is $r->{status}, 400, 'two session cookies in one request: refused';
$r = $t->req(GET => '/auth/accounts', headers => { cookie => "svc_dev_session=$ann_cookie; svc_dev_browser=$browser_cookie; svc_dev_browser=x" });
is join(' ', map { $_->{user}{email} } @{ $r->{json}{accounts} // [] }), 'ann@example.com',
    'two browser cookies: neither counts (only the active session is listed)';

# a sign-in without add replaces the active session
$r = enter($b, 'cat@example.com');
is $r->{status}, 200, 'cat signs in without add';
is listed($b), 'bob@example.com cat@example.com*', "... ann's session (the active one) ended, bob stays";
is $t->req(GET => '/auth/me', headers => { cookie => "svc_dev_session=$ann_cookie" })->{status}, 401, "... ann's cookie is dead";

# the same account again: one session per account
enter($b, 'bob@example.com', add => 1);
is listed($b), 'cat@example.com bob@example.com*', 'bob again: still one entry for bob';
is $t->req(GET => '/auth/me', headers => { cookie => "svc_dev_session=$bob_cookie" })->{status}, 401, "... bob's older session ended";

# signin_browser_accounts 3: the least recently used goes
enter($b, 'dan@example.com', add => 1);
is listed($b), 'cat@example.com bob@example.com dan@example.com*', 'three accounts';
breq($b, POST => '/auth/accounts/switch', json => { session_id => id_of($b, 'cat@example.com') }, headers => $O);
my $r4 = enter($b, 'fay@example.com', add => 1);
is listed($b), 'cat@example.com dan@example.com fay@example.com*', 'a fourth: bob, used least recently, is signed out';
my ($rc, $audit) = $t->admin('audit', 100, '--kind', 'session.evicted');
like $audit, qr/bob\@example\.com/, '... and the audit trail says so';

# a password sign-in can add too
$t->req(POST => '/auth/password', json => { password => 'a long enough password' }, headers => { %$O, cookie => "svc_dev_session=$b->{jar}{svc_dev_session}" });
$r = breq($b, POST => '/auth/password/session', json => { email => 'fay@example.com', password => 'a long enough password', add => JSON::PP::true }, headers => $O);
is $r->{status}, 200, 'a password sign-in with add: true';
is listed($b), 'cat@example.com dan@example.com fay@example.com*', '... the same account replaces its own session';
is breq(browser(), POST => '/auth/token', json => { token => $t->request_token('gus@example.com'), add => JSON::PP::true })->{status}, 400,
    'add is a cookie sign-in\'s: POST /token refuses it';

# logout: the active one; the others stay and can be switched to with the browser cookie alone
$r = breq($b, POST => '/auth/logout', json => {}, headers => $O);
is $r->{status}, 204, 'POST /logout';
ok !exists $b->{jar}{svc_dev_session}, '... clears the session cookie';
ok exists $b->{jar}{svc_dev_browser}, '... and keeps the browser cookie';
is listed($b), 'cat@example.com dan@example.com', '... the other accounts stay, none active';
is me($b), 401, '... and no one is signed in';
$r = breq($b, POST => '/auth/accounts/switch', json => { session_id => id_of($b, 'dan@example.com') }, headers => $O);
is $r->{status}, 204, 'switch from the chooser';
is me($b), 'dan@example.com', '... dan is signed in';

# logout all: every session of this browser, none of another
my $elsewhere = browser();
enter($elsewhere, 'dan@example.com');
my $dan_cookie = $b->{jar}{svc_dev_session};
$r = breq($b, POST => '/auth/logout', json => { all => JSON::PP::true }, headers => $O);
is $r->{status}, 204, 'POST /logout {all: true}';
ok !exists $b->{jar}{svc_dev_session} && !exists $b->{jar}{svc_dev_browser}, '... clears both cookies';
is $t->req(GET => '/auth/me', headers => { cookie => "svc_dev_session=$dan_cookie" })->{status}, 401, '... every session of the browser ended';
is_deeply $t->req(GET => '/auth/accounts', headers => { cookie => "svc_dev_browser=$browser_cookie" })->{json}{accounts}, [],
    '... the old browser cookie lists nothing';
is me($elsewhere), 'dan@example.com', "... dan's session in another browser stays";

# logout all from the chooser (no active session): the browser cookie, with the Origin
my $c = browser();
enter($c, 'hal@example.com');
enter($c, 'ivy@example.com', add => 1);
breq($c, POST => '/auth/logout', json => {}, headers => $O);
is listed($c), 'hal@example.com', 'one account left, none active';
is breq($c, POST => '/auth/logout', json => { all => JSON::PP::true })->{status}, 403, 'logout all by the browser cookie without Origin: 403';
is listed($c), 'hal@example.com', '... nothing ended';
is breq($c, POST => '/auth/logout', json => { all => JSON::PP::true }, headers => $O)->{status}, 204, '... with it: 204';
is listed($c), '', '... and nothing is left';
is breq(browser(), POST => '/auth/logout', json => { all => JSON::PP::true }, headers => $O)->{status}, 401,
    'logout all with no cookie at all: 401';

# an account with a second factor: the add of the first step holds through the second
SKIP: {
    my $oathtool = SigninTest::which('oathtool') or skip 'no oathtool (build.sh installs Debian\'s oathtool)', 4;
    my $code = sub { my $c = `$oathtool --totp -b $_[0] 2>&1`; chomp $c; $c };
    my $k = browser();
    enter($k, 'kim@example.com');
    my $setup = breq($k, POST => '/auth/mfa/totp/setup', json => {}, headers => $O);
    my $secret = $setup->{json}{secret};
    sleep 1 + 30 - time % 30 if 30 - time % 30 < 4;
    my $on = breq($k, POST => '/auth/mfa/totp/confirm', json => { code => $code->($secret) }, headers => $O);
    is $on->{status}, 200, 'kim turns on TOTP';
    my $m = browser();
    enter($m, 'lou@example.com');
    $r = enter($m, 'kim@example.com', add => 1);
    is $r->{status}, 202, 'kim signs in with add: true: the second step is asked';
    # a recovery code: the TOTP code of this step was spent by the confirmation
    $r = breq($m, POST => '/auth/mfa/verify', json => { mfa_token => $r->{json}{mfa_token}, recovery_code => $on->{json}{recovery_codes}[0] }, headers => $O);
    is $r->{status}, 200, '... and passed';
    is listed($m), 'lou@example.com kim@example.com*', '... added: lou stays';
}

# a bearer token is no browser's
my $bearer = $t->bearer('jim@example.com');
is $t->req(GET => '/auth/accounts', headers => { authorization => "Bearer $bearer" })->{status}, 400, 'GET /accounts by bearer: 400';

# nginx -t bounds the setting
my ($code, $out) = $t->nginx_t(http => $t->signin_http(extra => 'signin_browser_accounts 0;'));
isnt $code, 0, 'signin_browser_accounts 0 is refused by nginx -t';
like $out, qr/value must be between 1 and 100 in \S+nginx\.conf:\d+/, '... on its line';
$t->done;
done_testing;
