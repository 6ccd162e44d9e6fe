# Sessions and credentials: the session cookie and
# its attributes (loopback and https origins), bearer tokens, ambiguous credentials, /me,
# /sessions, /sessions/revoke, /logout, a new session at every sign-in, absolute and idle
# lifetimes, bearer expires_in, the signin_require gate and its variables, and reload.
use strict; use warnings;
use Test::More;
use Time::HiRes qw(time);
use lib 't/lib'; use SigninTest;

my $n = 0;
sub addr { my ($p) = @_; $n++; return "$p$n\@example.com" }
my $RFC3339 = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$/;

sub conf {
    my (%o) = @_;
    # the dev mailbox with a non-loopback origin must be asked for on purpose
    my $mb = ($o{origin} // '') =~ /^https:/ ? ' insecure' : '';
    return qq{
    signin_store %%STORE%%;
    signin_origin @{[ $o{origin} // 'http://127.0.0.1:%%PORT%%' ]};
    signin_registration on;
    signin_delivery /_signin/deliver;
    @{[ $o{extra} // '' ]}
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-Pid \$pid always;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox@{[ $mb ]}; }
        location = /_dev/mailbox { signin_dev_mailbox@{[ $mb ]}; }
        # the gate runs in the access phase: a `return` (rewrite phase) would answer before it,
        # so the protected location proxies to a "legacy app" that echoes what it was told
        location /app/ {
            signin_require on;
            proxy_set_header X-User-Id \$signin_user_id;
            proxy_set_header X-User-Email \$signin_user_email;
            proxy_set_header X-Session-Id \$signin_session_id;
            proxy_set_header Authorization "";
            proxy_set_header Cookie "";
            proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
        }
        location /_legacy/ {
            allow 127.0.0.1; deny all;
            default_type text/plain;
            return 200 "user=\$http_x_user_id email=\$http_x_user_email session=\$http_x_session_id";
        }
        location /open/ {
            default_type text/plain;
            return 200 "user=\$signin_user_id.";
        }
    }
};
}
sub start { my (%o) = @_; my $t = SigninTest->new; $t->run(http => conf(%o)); return $t }

my $t;
my $O;
sub api {
    my ($m, $p, %o) = @_;
    my $r = $t->req($m, $p, %o);
    # every answer of the module; a 200 from behind signin_require is the protected app's own
    return $r if $p =~ m{^/app/} && $r->{status} == 200;
    like $r->{headers}{'cache-control'} // '', qr/\bno-store\b/i, "$m $p answered $r->{status} with cache-control: no-store";
    return $r;
}
sub err_is {
    my ($r, $status, $code, $name) = @_;
    is $r->{status}, $status, "$name: status $status" or diag "got $r->{status}: $r->{content}";
    is(($r->{json} || {})->{code}, $code, "$name: code $code") if defined $code;
}
# a browser sends the Origin with every POST (a signed-in write by cookie needs it)
sub C { return { cookie => $_[0], origin => $O } }
sub B { return { authorization => "Bearer $_[0]" } }

# (name, value, {lowercase attribute => value}) of a Set-Cookie header
sub parse_cookie {
    my ($r) = @_;
    my $sc = $r->{headers}{'set-cookie'};
    return unless defined $sc;
    $sc = $sc->[0] if ref $sc;
    my ($pair, @attrs) = map { s/^\s+|\s+$//gr } split /;/, $sc;
    my ($name, $value) = split /=/, $pair, 2;
    my %a;
    for (@attrs) { my ($k, $v) = split /=/, $_, 2; $a{lc $k} = $v // '' }
    return ($name, $value, \%a, $sc);
}

sub check_cookie_attrs {
    my ($r, $want_name, $label) = @_;
    my ($name, $value, $a, $raw) = parse_cookie($r);
    is $name, $want_name, "$label: cookie name $want_name" or diag $raw // 'no set-cookie';
    like $value // '', qr/^[A-Za-z0-9_-]{43}$/, "$label: cookie value is a 43-character secret";
    ok exists $a->{secure}, "$label: Secure";
    ok exists $a->{httponly}, "$label: HttpOnly";
    is $a->{samesite}, 'Lax', "$label: SameSite=Lax";
    is $a->{path}, '/', "$label: Path=/";
    ok !exists $a->{domain}, "$label: no Domain";
    my @other = grep { !/^(secure|httponly|samesite|path|max-age|expires)$/ } keys %$a;
    is "@other", '', "$label: no other attributes";
    ok !defined $a->{'max-age'} || $a->{'max-age'} > 0, "$label: a positive Max-Age if any";
    return ("$name=$value", $a);
}

sub sign_in_cookie {
    my ($e, %o) = @_;
    my $tok = $t->request_token($e, %o);
    my $r = api(POST => '/auth/session', json => { token => $tok }, headers => { origin => $O, 'user-agent' => $o{ua} // 'signin-test/1' });
    is $r->{status}, 200, "signed in $e with a cookie" or diag $r->{content};
    return (SigninTest::set_cookie_pair($r), $r);
}
sub sign_in_bearer {
    my ($e, %o) = @_;
    my $tok = $t->request_token($e, %o);
    my $r = api(POST => '/auth/token', json => { token => $tok }, headers => { 'user-agent' => 'bearer-client/2' });
    is $r->{status}, 200, "signed in $e with a bearer token" or diag $r->{content};
    return ($r->{json}{access_token}, $r);
}
# GET /me adds the roles to the user JSON every other answer carries.
sub user_ok {
    my ($u, $email, $label, %o) = @_;
    my @keys = (qw(created_at email group_id id), ($o{me} ? ('roles') : ()), 'updated_at');
    is_deeply [sort keys %{ $u || {} }], \@keys, "$label: user JSON has exactly @keys";
    is_deeply $u->{roles}, [], "$label: no roles yet" if $o{me};
    is $u->{email}, $email, "$label: email";
    ok length($u->{id} // '') && !ref $u->{id}, "$label: id is a string";
    like $u->{created_at} // '', $RFC3339, "$label: created_at is RFC 3339";
    like $u->{updated_at} // '', $RFC3339, "$label: updated_at is RFC 3339";
}
sub sessions_of { my ($h) = @_; my $r = api(GET => '/auth/sessions', headers => $h); return ($r, @{ ($r->{json} || {})->{sessions} || [] }) }

# ================================================================ loopback origin
$t = start(extra => 'signin_bearer_ttl 90s;');
$O = $t->origin;
my $alice = addr('alice');
my ($c1, $s1) = sign_in_cookie($alice, ua => 'browser-one/1');
{
    my ($pair) = check_cookie_attrs($s1, 'svc_dev_session', 'loopback /session');
    user_ok $s1->{json}, $alice, '/session answer';
    my $me = api(GET => '/auth/me', headers => C($c1));
    is $me->{status}, 200, '/me with the cookie';
    user_ok $me->{json}, $alice, '/me (cookie)', me => 1;
    is_deeply { %{ $me->{json} }, roles => undef }, { %{ $s1->{json} }, roles => undef }, '/me is the user /session answered';
    err_is api(GET => '/auth/me', headers => C('svc_dev_session=' . ('x' x 43))), 401, 'unauthenticated', '/me with an unknown cookie';
    err_is api(GET => '/auth/me', headers => C('__Host-svc_session=' . ($c1 =~ s/^[^=]*=//r))), 401, 'unauthenticated', '/me with the secret under the https cookie name';
    my $r = api(GET => '/auth/me', headers => C("theme=dark; $c1; lang=en"));
    is $r->{status}, 200, 'other cookies beside the session cookie are fine' or diag $r->{content};
}

my ($b1, $bt) = sign_in_bearer($alice);
{
    is $bt->{json}{token_type}, 'Bearer', 'token_type Bearer';
    is $bt->{json}{expires_in}, 90, 'expires_in equals signin_bearer_ttl (90s)';
    like $b1 // '', qr/^[A-Za-z0-9_-]{43}$/, 'access_token is a 43-character secret';
    user_ok $bt->{json}{user}, $alice, '/token user';
    ok !$bt->{headers}{'set-cookie'}, '/token sets no cookie';
    my $me = api(GET => '/auth/me', headers => B($b1));
    is $me->{status}, 200, '/me with the bearer token';
    is $me->{json}{id}, $s1->{json}{id}, 'the bearer token is the same user';
    user_ok $me->{json}, $alice, '/me (bearer)', me => 1;
    my $r = api(GET => '/auth/me');
    err_is $r, 401, 'unauthenticated', '/me without credentials';
    like $r->{headers}{'www-authenticate'} // '', qr/^Bearer\b/, '401 without credentials: WWW-Authenticate: Bearer';
    $r = api(GET => '/auth/me', headers => B('x' x 43));
    err_is $r, 401, 'unauthenticated', '/me with an unknown bearer token';
    like $r->{headers}{'www-authenticate'} // '', qr/^Bearer\b/, 'bad bearer: WWW-Authenticate: Bearer';
    err_is api(GET => '/auth/me', headers => { authorization => "Basic " . ('x' x 20) }), 401, 'unauthenticated', '/me with Basic authorization';
    err_is api(GET => '/auth/me', headers => C("svc_dev_session=$b1")), 401, 'unauthenticated', 'a bearer secret is not a cookie session';
    err_is api(GET => '/auth/me', headers => B($c1 =~ s/^[^=]*=//r)), 401, 'unauthenticated', 'a cookie secret is not a bearer token';
}

# cookie and bearer together; two session cookies (cookie tossing)
{
    my $both = { cookie => $c1, authorization => "Bearer $b1" };
    err_is api(GET => '/auth/me', headers => $both), 400, 'ambiguous_credentials', '/me with cookie and bearer';
    err_is api(GET => '/auth/sessions', headers => $both), 400, 'ambiguous_credentials', '/sessions with cookie and bearer';
    err_is api(POST => '/auth/logout', json => {}, headers => $both), 400, 'ambiguous_credentials', '/logout with cookie and bearer';
    err_is api(POST => '/auth/sessions/revoke', json => { id => 'x' }, headers => $both), 400, 'ambiguous_credentials', '/sessions/revoke with cookie and bearer';
    my $r = api(GET => '/app/x', headers => $both);
    err_is $r, 400, 'ambiguous_credentials', 'signin_require with cookie and bearer';
    unlike $r->{content}, qr/user=/, 'the gate did not let it through';

    my ($c2) = sign_in_cookie(addr('mallory'));
    err_is api(GET => '/auth/me', headers => C("$c1; $c2")), 400, 'ambiguous_credentials', 'two session cookies in one Cookie header';
    err_is api(GET => '/auth/me', headers => C("$c1; $c1")), 400, 'ambiguous_credentials', 'the same session cookie twice';
    err_is api(GET => '/auth/me', headers => C("$c1; svc_dev_session=junk")), 400, 'ambiguous_credentials', 'a session cookie and a junk one';
    err_is api(GET => '/app/x', headers => C("$c2; $c1")), 400, 'ambiguous_credentials', 'signin_require with two session cookies';
    for my $path ('/auth/me', '/app/x') {
        my $raw = $t->raw("GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: $c1\r\nCookie: $c2\r\nConnection: close\r\n\r\n");
        my ($st) = $raw =~ m{^HTTP/1\.\d (\d+)};
        is $st, 400, "$path with two Cookie headers: 400" or diag $raw;
        like $raw, qr/"code"\s*:\s*"ambiguous_credentials"/, "$path with two Cookie headers: ambiguous_credentials";
        unlike $raw, qr/user=/, "$path with two Cookie headers: neither session is used";
    }
}

# /sessions
{
    my ($r, @list) = sessions_of(C($c1));
    is $r->{status}, 200, '/sessions (cookie)';
    is scalar(@list), 2, 'alice has two sessions (cookie, bearer)';
    for my $s (@list) {
        is_deeply [sort keys %$s], [sort qw(id created_at last_seen_at expires_at client user_agent current kind fresh)], 'a session entry has exactly the documented fields';
        like $s->{$_} // '', $RFC3339, "$_ is RFC 3339" for qw(created_at last_seen_at expires_at);
        ok $s->{expires_at} gt $s->{created_at}, 'expires_at after created_at';
        is $s->{client}, '127.0.0.1', 'client is the remote address';
        ok JSON::PP::is_bool($s->{current}) && JSON::PP::is_bool($s->{fresh}), 'current and fresh are JSON booleans';
        ok $s->{fresh}, 'a session just made from an email token is fresh';
    }
    my ($cur) = grep { $_->{current} } @list;
    my ($other) = grep { !$_->{current} } @list;
    ok $cur && $other, 'exactly one entry is current';
    is scalar(grep { $_->{current} } @list), 1, 'one current entry';
    is $cur->{kind}, 'cookie', 'the current (cookie) session has kind cookie';
    is $cur->{user_agent}, 'browser-one/1', 'and its user agent';
    is $other->{kind}, 'bearer', 'the other has kind bearer';
    is $other->{user_agent}, 'bearer-client/2', 'and its user agent';
    my ($rb, @lb) = sessions_of(B($b1));
    is $rb->{status}, 200, '/sessions (bearer)';
    my ($curb) = grep { $_->{current} } @lb;
    is $curb && $curb->{id}, $other->{id}, 'seen with the bearer token, the bearer session is current';

    # signin_require exposes the user and the session
    my $app = api(GET => '/app/page', headers => C($c1));
    is $app->{status}, 200, 'signin_require passes with the cookie' or diag $app->{content};
    is $app->{content}, "user=$s1->{json}{id} email=$alice session=$cur->{id}", '$signin_user_id, $signin_user_email, $signin_session_id (cookie)';
    $app = api(GET => '/app/page', headers => B($b1));
    is $app->{status}, 200, 'signin_require passes with the bearer token';
    is $app->{content}, "user=$s1->{json}{id} email=$alice session=$other->{id}", 'the variables (bearer)';
    $app = api(GET => '/app/page');
    err_is $app, 401, 'unauthenticated', 'signin_require without credentials';
    like $app->{headers}{'content-type'} // '', qr{^application/json}, 'signin_require 401 is JSON';
    like $app->{headers}{'www-authenticate'} // '', qr/^Bearer\b/, 'signin_require 401: WWW-Authenticate: Bearer';
    unlike $app->{content}, qr/user=/, 'and the protected content is not served';
    err_is api(GET => '/app/page', headers => B('y' x 43)), 401, 'unauthenticated', 'signin_require with an unknown bearer';
    my $open = $t->req(GET => '/open/', headers => C($c1));
    is $open->{content}, 'user=.', 'the variables are empty where signin_require is off';
}

# a new session at every sign-in; revoke; logout
{
    my ($c3, $s3) = sign_in_cookie($alice, login => 1, ua => 'browser-two/1');
    isnt $c3, $c1, 'a second sign-in gets a new cookie secret';
    my ($r, @list) = sessions_of(C($c3));
    is scalar(@list), 3, 'alice now has three sessions';
    my ($cur3) = grep { $_->{current} } @list;
    my ($cur1) = grep { $_->{user_agent} eq 'browser-one/1' } @list;
    ok $cur3 && $cur1 && $cur3->{id} ne $cur1->{id}, 'and a new session id';
    my %ids = map { $_->{id} => 1 } @list;
    is scalar(keys %ids), 3, 'all session ids differ';

    my $bob = addr('bob');
    my ($cb) = sign_in_cookie($bob);
    my (undef, @bl) = sessions_of(C($cb));
    is scalar(@bl), 1, 'bob sees only his own session';
    ok !(grep { $ids{ $_->{id} } } @bl), "none of alice's sessions are in bob's list";

    $r = api(POST => '/auth/sessions/revoke', json => { id => $bl[0]{id} }, headers => C($c1));
    err_is $r, 404, 'not_found', "alice revoking bob's session id";
    is api(GET => '/auth/me', headers => C($cb))->{status}, 200, "bob's session survived";
    err_is api(POST => '/auth/sessions/revoke', json => { id => 'no-such-session' }, headers => C($c1)), 404, 'not_found', 'revoking an unknown id';
    err_is api(POST => '/auth/sessions/revoke', json => { id => $cur3->{id} }), 401, 'unauthenticated', 'revoke without credentials';

    $r = api(POST => '/auth/sessions/revoke', json => { id => $cur3->{id} }, headers => C($c1));
    is $r->{status}, 204, 'revoking one of my sessions: 204' or diag $r->{content};
    is $r->{content} // '', '', 'with no body';
    err_is api(GET => '/auth/me', headers => C($c3)), 401, 'unauthenticated', 'the revoked session is dead';
    err_is api(GET => '/app/x', headers => C($c3)), 401, 'unauthenticated', 'also at signin_require';
    is api(GET => '/auth/me', headers => C($c1))->{status}, 200, 'the revoking session lives';
    err_is api(POST => '/auth/sessions/revoke', json => { id => $cur3->{id} }, headers => C($c1)), 404, 'not_found', 'revoking it again';
    (undef, @list) = sessions_of(C($c1));
    ok !(grep { $_->{id} eq $cur3->{id} } @list), 'the revoked session is no longer listed';

    # revoke through a bearer token
    my ($c4) = sign_in_cookie($alice, login => 1, ua => 'browser-three/1');
    (undef, @list) = sessions_of(C($c4));
    my ($cur4) = grep { $_->{current} } @list;
    $r = api(POST => '/auth/sessions/revoke', json => { id => $cur4->{id} }, headers => B($b1));
    is $r->{status}, 204, 'revoke with a bearer token: 204';
    err_is api(GET => '/auth/me', headers => C($c4)), 401, 'unauthenticated', 'that cookie session is dead';

    # logout (cookie): ends this session only, clears the cookie
    my ($c5) = sign_in_cookie($alice, login => 1, ua => 'browser-four/1');
    $r = api(POST => '/auth/logout', json => {}, headers => C($c5));
    is $r->{status}, 204, 'POST /logout {} : 204' or diag $r->{content};
    my ($name, $value, $a) = parse_cookie($r);
    is $name, 'svc_dev_session', 'logout sets the session cookie';
    is $value, '', 'to an empty value';
    is $a && $a->{'max-age'}, '0', 'with Max-Age=0';
    ok $a && exists $a->{secure} && exists $a->{httponly} && ($a->{path} // '') eq '/', 'with the same Secure, HttpOnly, Path=/';
    err_is api(GET => '/auth/me', headers => C($c5)), 401, 'unauthenticated', 'the logged-out session is dead';
    err_is api(POST => '/auth/logout', json => {}, headers => C($c5)), 401, 'unauthenticated', 'logging out again';
    is api(GET => '/auth/me', headers => C($c1))->{status}, 200, "the user's other cookie session lives";
    is api(GET => '/auth/me', headers => B($b1))->{status}, 200, "the user's bearer session lives";
    is api(GET => '/auth/me', headers => C($cb))->{status}, 200, "another user's session lives";
    err_is api(POST => '/auth/logout', json => {}), 401, 'unauthenticated', '/logout without credentials';

    # logout (bearer)
    my ($b2) = sign_in_bearer($alice, login => 1);
    $r = api(POST => '/auth/logout', json => {}, headers => B($b2));
    is $r->{status}, 204, 'logout with a bearer token: 204';
    ok !$r->{headers}{'set-cookie'}, 'and no cookie is set';
    err_is api(GET => '/auth/me', headers => B($b2)), 401, 'unauthenticated', 'the bearer token is dead';
    is api(GET => '/auth/me', headers => B($b1))->{status}, 200, 'the other bearer token lives';
}

# sessions survive a reload; a token issued before the reload is exchanged after it
{
    my $tok = $t->request_token(addr('reload'));
    my @before = $t->worker_pids;
    $t->reload;
    my @after = $t->worker_pids;
    ok !(grep { my $p = $_; grep { $_ == $p } @before } @after), 'the reload replaced every worker';
    is api(GET => '/auth/me', headers => C($c1))->{status}, 200, 'a cookie session survives the reload';
    is api(GET => '/auth/me', headers => B($b1))->{status}, 200, 'a bearer session survives the reload';
    is api(GET => '/app/x', headers => C($c1))->{status}, 200, 'signin_require after the reload';
    is api(POST => '/auth/session', json => { token => $tok }, headers => { origin => $O })->{status}, 200, 'a token from before the reload is exchanged after it';
}
$t->done;

# ================================================================ https origin: __Host- cookie
$t = start(origin => 'https://app.example.com');
$O = 'https://app.example.com';
{
    my $e = addr('https');
    my $tok = $t->request_token($e);
    err_is api(POST => '/auth/session', json => { token => $tok }, headers => { origin => 'http://127.0.0.1:' . $t->port }), 403, 'origin_mismatch', 'https origin configured, loopback origin sent';
    err_is api(POST => '/auth/session', json => { token => $tok }, headers => { origin => 'http://app.example.com' }), 403, 'origin_mismatch', 'the http:// form of the origin';
    my $r = api(POST => '/auth/session', json => { token => $tok }, headers => { origin => $O });
    is $r->{status}, 200, 'sign in with origin https://app.example.com' or diag $r->{content};
    my ($pair, $a) = check_cookie_attrs($r, '__Host-svc_session', 'https /session');
    is api(GET => '/auth/me', headers => C($pair))->{status}, 200, '/me with the __Host- cookie';
    err_is api(GET => '/auth/me', headers => C('svc_dev_session=' . ($pair =~ s/^[^=]*=//r))), 401, 'unauthenticated', 'the dev cookie name is not accepted on https';
    $r = api(POST => '/auth/logout', json => {}, headers => C($pair));
    is $r->{status}, 204, 'logout';
    my ($name, $value, $la) = parse_cookie($r);
    is $name, '__Host-svc_session', 'logout clears the __Host- cookie';
    is $la && $la->{'max-age'}, '0', 'with Max-Age=0';
}
$t->done;

# ================================================================ absolute lifetime and bearer lifetime
# The windows are short (the lifetimes are msec values; expires_in and Max-Age count whole
# seconds, so 1s keeps them meaningful). Each wait is measured from when the sessions were made.
$t = start(extra => 'signin_session_ttl 1s; signin_bearer_ttl 1s;');
$O = $t->origin;
{
    my $made_after = time;
    my ($c, $s) = sign_in_cookie(addr('ttl'));
    my ($b, $bt) = sign_in_bearer(addr('ttl'));
    my $made_before = time;
    is $bt->{json}{expires_in}, 1, 'expires_in is 1 with signin_bearer_ttl 1s';
    my (undef, undef, $a) = parse_cookie($s);
    ok !defined $a->{'max-age'} || $a->{'max-age'} <= 1, 'the cookie Max-Age is not beyond the session lifetime';
    is api(GET => '/auth/me', headers => C($c))->{status}, 200, 'cookie session alive at first';
    is api(GET => '/auth/me', headers => B($b))->{status}, 200, 'bearer session alive at first';
    $t->sleep_until($made_after + 0.5);
    is api(GET => '/auth/me', headers => C($c))->{status}, 200, 'cookie session alive after 0.5s (and used)'
        or diag sprintf 'asked %.3f s after the sign-in', time - $made_after;
    $t->sleep_until($made_before + 1 + 0.05);
    err_is api(GET => '/auth/me', headers => C($c)), 401, 'unauthenticated', 'cookie session dead after signin_session_ttl, though it was used';
    err_is api(GET => '/auth/me', headers => B($b)), 401, 'unauthenticated', 'bearer token dead after signin_bearer_ttl';
    err_is api(GET => '/app/x', headers => C($c)), 401, 'unauthenticated', 'signin_require refuses the expired session';
}
$t->done;

# ================================================================ bearer lifetime independent of the session lifetime
$t = start(extra => 'signin_session_ttl 1h; signin_bearer_ttl 500ms;');
$O = $t->origin;
{
    my ($b, $bt) = sign_in_bearer(addr('bttl'));
    my $made_before = time;
    is $bt->{json}{expires_in}, 1, 'expires_in follows signin_bearer_ttl (500ms: 1 s rounded up), not signin_session_ttl';
    my ($c) = sign_in_cookie(addr('bttl'));
    $t->sleep_until($made_before + 0.5 + 0.05);
    err_is api(GET => '/auth/me', headers => B($b)), 401, 'unauthenticated', 'the bearer token expired after signin_bearer_ttl';
    is api(GET => '/auth/me', headers => C($c))->{status}, 200, 'the cookie session (1h) lives';
}
$t->done;

# ================================================================ idle lifetime
$t = start(extra => 'signin_session_idle 500ms;');
$O = $t->origin;
{
    my ($c) = sign_in_cookie(addr('idle'));
    my $made_before = time;
    is api(GET => '/auth/me', headers => C($c))->{status}, 200, 'a fresh session is alive';
    $t->sleep_until($made_before + 0.5 + 0.05);
    err_is api(GET => '/auth/me', headers => C($c)), 401, 'unauthenticated', 'a session unused for longer than signin_session_idle is dead';
    my ($r, @l) = sessions_of(C($c));
    is $r->{status}, 401, '/sessions with the idle session: 401';
}
$t->done;
done_testing;
