# HTTP rules of the sign-in API: content type, no-store on
# every answer, origin rules, tokens only in POST bodies, unknown endpoints and wrong methods,
# password endpoints while passwords are off, bad input (400, nothing changes) and body limits.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http);
my $O = $t->origin;
my $n = 0;
sub addr { my ($p) = @_; $n++; return "$p$n\@example.com" }

# Every answer of the API must carry cache-control: no-store, whatever its status.
sub api {
    my ($m, $p, %o) = @_;
    my $r = $t->req($m, $p, %o);
    like $r->{headers}{'cache-control'} // '', qr/\bno-store\b/i, "$m $p answered $r->{status} with cache-control: no-store";
    return $r;
}

sub err_is {
    my ($r, $status, $code, $name) = @_;
    is $r->{status}, $status, "$name: status $status" or diag "got $r->{status}: $r->{content}";
    like $r->{headers}{'content-type'} // '', qr{^application/json}, "$name: JSON error body";
    is(($r->{json} || {})->{code}, $code, "$name: code $code") if defined $code;
    ok defined(($r->{json} || {})->{error}) && length(($r->{json} || {})->{error}), "$name: error message present";
}

sub mail_count { scalar(my @m = $t->mailbox) }

sub exchange {
    my ($tok, %o) = @_;
    return api(POST => '/auth/session', json => { token => $tok }, headers => { origin => $O, %{ $o{headers} || {} } });
}

# The raw HTTP response split into (status, {lowercase headers}, body).
sub parse_raw {
    my ($raw) = @_;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head // '';
    my ($status) = (shift(@lines) // '') =~ m{^HTTP/1\.\d (\d+)};
    my %h;
    for (@lines) { my ($k, $v) = /^([^:]+):\s*(.*)$/ or next; $h{lc $k} = defined $h{lc $k} ? "$h{lc $k}, $v" : $v }
    return ($status // 0, \%h, $body // '');
}

# ---------------------------------------------------------------- content type (415)
{
    my $e = addr('ct');
    my $r = api(POST => '/auth/register', body => qq({"email":"$e"}), finished => 1);
    err_is $r, 415, 'unsupported_media_type', 'POST without content-type';
    $r = api(POST => '/auth/register', body => qq({"email":"$e"}), headers => { 'content-type' => 'text/plain' }, finished => 1);
    err_is $r, 415, 'unsupported_media_type', 'POST text/plain';
    $r = api(POST => '/auth/register', body => qq({"email":"$e"}), headers => { 'content-type' => 'application/x-www-form-urlencoded' }, finished => 1);
    err_is $r, 415, 'unsupported_media_type', 'POST form-urlencoded';
    $r = api(POST => '/auth/register', body => qq({"email":"$e"}), headers => { 'content-type' => 'application/jsonp' }, finished => 1);
    err_is $r, 415, 'unsupported_media_type', 'POST application/jsonp';
    $r = api(POST => '/auth/token', body => '{"token":"x"}', headers => { 'content-type' => 'text/json' });
    err_is $r, 415, 'unsupported_media_type', 'POST /token text/json';
    $t->assert_nothing_sent($e, name => 'a refused content type sent no email');
    $r = api(POST => '/auth/register', body => qq({"email":"$e"}), headers => { 'content-type' => 'application/json; charset=utf-8' });
    is $r->{status}, 202, 'application/json; charset=utf-8 is accepted' or diag $r->{content};
    ok $t->last_email($e), 'and the email is sent';
    my $e2 = addr('ct');
    $r = api(POST => '/auth/register', body => qq({"email":"$e2"}), headers => { 'content-type' => 'Application/JSON' });
    is $r->{status}, 202, 'media type names are case-insensitive (Application/JSON)' or diag $r->{content};
}

# ---------------------------------------------------------------- origin
{
    my $e = addr('origin');
    my $tok = $t->request_token($e);
    my $r = api(POST => '/auth/session', json => { token => $tok });
    err_is $r, 403, 'origin_mismatch', '/session without origin';
    $r = api(POST => '/auth/session', json => { token => $tok }, headers => { origin => 'https://evil.example.com' });
    err_is $r, 403, 'origin_mismatch', '/session with a wrong origin';
    ok !$r->{headers}{'set-cookie'}, 'no cookie set on a refused /session';
    my $p2 = $t->port + 1;
    $r = api(POST => '/auth/session', json => { token => $tok }, headers => { origin => "http://127.0.0.1:$p2" });
    err_is $r, 403, 'origin_mismatch', '/session with the origin of another port';
    $r = api(POST => '/auth/session', json => { token => $tok }, headers => { origin => 'null' });
    err_is $r, 403, 'origin_mismatch', '/session with origin null';
    $r = exchange($tok);
    is $r->{status}, 200, 'the refused requests did not spend the token: /session with the right origin works' or diag $r->{content};
    my $cookie = SigninTest::set_cookie_pair($r);
    ok $cookie, 'cookie set';

    # a present, wrong origin is refused on every endpoint
    my $bad = { origin => 'https://evil.example.com' };
    err_is api(POST => '/auth/register', json => { email => addr('o') }, headers => $bad), 403, 'origin_mismatch', '/register wrong origin';
    err_is api(POST => '/auth/login', json => { email => $e }, headers => $bad), 403, 'origin_mismatch', '/login wrong origin';
    err_is api(GET => '/auth/me', headers => { %$bad, cookie => $cookie }), 403, 'origin_mismatch', '/me wrong origin (with a good cookie)';
    err_is api(GET => '/auth/sessions', headers => { %$bad, cookie => $cookie }), 403, 'origin_mismatch', '/sessions wrong origin';
    err_is api(POST => '/auth/sessions/revoke', json => { id => 'x' }, headers => { %$bad, cookie => $cookie }), 403, 'origin_mismatch', '/sessions/revoke wrong origin';
    err_is api(POST => '/auth/logout', json => {}, headers => { %$bad, cookie => $cookie }), 403, 'origin_mismatch', '/logout wrong origin';
    $r = api(GET => '/auth/me', headers => { cookie => $cookie });
    is $r->{status}, 200, 'the refused /logout did not end the session' or diag $r->{content};

    my $e2 = addr('origin');
    my $tok2 = $t->request_token($e2);
    err_is api(POST => '/auth/token', json => { token => $tok2 }, headers => $bad), 403, 'origin_mismatch', '/token wrong origin';
    $r = api(POST => '/auth/token', json => { token => $tok2 });
    is $r->{status}, 200, '/token works without an origin (and the refused try did not spend the token)' or diag $r->{content};
    ok $r->{json} && $r->{json}{access_token}, 'bearer token answered';
    my $bearer = $r->{json}{access_token};
    err_is api(GET => '/auth/me', headers => { %$bad, authorization => "Bearer $bearer" }), 403, 'origin_mismatch', 'bearer /me with a wrong origin';
    $r = api(GET => '/auth/me', headers => { authorization => "Bearer $bearer" });
    is $r->{status}, 200, 'bearer /me without origin' or diag $r->{content};
    $r = api(GET => '/auth/me', headers => { origin => $O, authorization => "Bearer $bearer" });
    is $r->{status}, 200, 'bearer /me with the right origin' or diag $r->{content};
    my $e3 = addr('origin');
    $r = api(POST => '/auth/register', json => { email => $e3 }, headers => { origin => $O });
    is $r->{status}, 202, '/register with the right origin' or diag $r->{content};
    $r = api(POST => '/auth/login', json => { email => $e3 });
    is $r->{status}, 202, '/login without origin' or diag $r->{content};
}

# ---------------------------------------------------------------- tokens only in POST bodies
{
    my $e = addr('query');
    my $tok = $t->request_token($e);
    my $r = api(POST => "/auth/session?token=$tok", json => {}, headers => { origin => $O });
    err_is $r, 400, 'invalid_request', 'POST /session?token=T with body {}';
    ok !$r->{headers}{'set-cookie'}, 'no cookie from a token in the query string';
    $r = api(POST => "/auth/token?token=$tok", json => {});
    err_is $r, 400, 'invalid_request', 'POST /token?token=T with body {}';
    $r = api(GET => "/auth/session?token=$tok", headers => { origin => $O });
    err_is $r, 405, 'method_not_allowed', 'GET /session?token=T';
    like $r->{headers}{allow} // '', qr/\bPOST\b/, 'GET /session: Allow names POST';
    $r = api(GET => "/auth/token?token=$tok");
    err_is $r, 405, 'method_not_allowed', 'GET /token?token=T';
    $r = exchange($tok);
    is $r->{status}, 200, 'the token from the query string is still unspent and works from a body' or diag $r->{content};
}

# ---------------------------------------------------------------- unknown endpoints (404) and methods (405)
{
    err_is api(GET => '/auth/nope'), 404, 'not_found', 'GET /auth/nope';
    err_is api(POST => '/auth/nope', json => {}), 404, 'not_found', 'POST /auth/nope';
    err_is api(GET => '/auth/'), 404, 'not_found', 'GET /auth/';
    err_is api(GET => '/auth/me/extra'), 404, 'not_found', 'GET /auth/me/extra';
    err_is api(POST => '/auth/registerx', json => { email => addr('x') }), 404, 'not_found', 'POST /auth/registerx';
    for my $c (
        [GET => '/auth/register', 'POST'], [GET => '/auth/login', 'POST'], [PUT => '/auth/session', 'POST'],
        [DELETE => '/auth/token', 'POST'], [POST => '/auth/me', 'GET'], [DELETE => '/auth/sessions', 'GET'],
        [GET => '/auth/sessions/revoke', 'POST'], [GET => '/auth/logout', 'POST'], [PATCH => '/auth/me', 'GET'],
    ) {
        my ($m, $p, $allow) = @$c;
        my $r = api($m, $p, ($m eq 'GET' || $m eq 'DELETE') ? () : (json => {}));
        err_is $r, 405, 'method_not_allowed', "$m $p";
        like $r->{headers}{allow} // '', qr/\b$allow\b/, "$m $p: Allow names $allow";
    }
}

# ---------------------------------------------------------------- password endpoints while passwords are off
for my $p (qw(/auth/password /auth/password/register /auth/password/session /auth/password/token /auth/password/change)) {
    my $r = api(POST => $p, json => { email => addr('pw'), password => 'correct horse battery staple 77' }, headers => { origin => $O },
        finished => 1);
    err_is $r, 403, 'passwords_disabled', "POST $p";
}
$t->assert_nothing_sent(qr/^pw\d/, name => 'password endpoints sent no email');

# ---------------------------------------------------------------- bad input: 400 JSON, nothing changes
{
    my $before = mail_count();
    diag "the mailbox holds $before emails: a count of 64 (all it keeps) would prove nothing" if $before >= 63;
    my @bad = (
        ['empty body', ''],
        ['truncated JSON', '{"email":"bad1@example.com"'],
        ['not JSON', 'email=bad1@example.com'],
        ['trailing garbage', '{"email":"bad2@example.com"} x'],
        ['two objects', '{"email":"bad2@example.com"}{"email":"bad2@example.com"}'],
        ['duplicate field', '{"email":"bad3@example.com","email":"bad3@example.com"}'],
        ['array', '["bad4@example.com"]'],
        ['string', '"bad4@example.com"'],
        ['null', 'null'],
        ['number field', '{"email":5}'],
        ['null field', '{"email":null}'],
        ['array field', '{"email":["bad5@example.com"]}'],
        ['object field', '{"email":{"a":"bad5@example.com"}}'],
        ['bool field', '{"email":true}'],
        ['missing field', '{}'],
        ['wrong field name', '{"mail":"bad6@example.com"}'],
        ['unknown field', '{"email":"bad7@example.com","name":"x"}'],
        ['number group', '{"email":"bad8@example.com","group":7}'],
        ['invalid UTF-8 in a value', qq({"email":"bad9\xff\@example.com"})],
        ['invalid UTF-8 in a group', qq({"email":"bad10\@example.com","group":"g\xc3\x28"})],
        ['overlong UTF-8', qq({"email":"bad11\@example.com","group":"\xc0\xaf"})],
        ['UTF-8 surrogate', qq({"email":"bad12\@example.com","group":"\xed\xa0\x80"})],
        ['NUL escape', '{"email":"bad13@example.com\u0000x"}'],
        # a raw NUL is no JSON (RFC 8259: control characters are escaped in strings); read as a
        # C string it would cut the address to bad15@example.com
        ['raw NUL in a string', qq({"email":"bad15\@example.com\0.evil.org"})],
        ['raw control byte', qq({"email":"bad16\@example.com\x01"})],
        ['single quotes', "{'email':'bad14\@example.com'}"],
    );
    for my $b (@bad) {
        my ($name, $body) = @$b;
        for my $ep (qw(register login)) {
            err_is api(POST => "/auth/$ep", body => $body, headers => { 'content-type' => 'application/json' }, finished => 1), 400, undef, "/$ep $name";
        }
    }
    for my $a ('not-an-address', 'a@b', '@example.com', 'bad20@', 'bad21@@example.com', 'bad 22@example.com',
               'bad23@example..com', '', ' ', 'bad24@example.com, bad25@example.com', "bad26\@example.com\n",
               '<bad27@example.com>', 'bad28@-example.com', ('x' x 250) . '@example.com') {
        my $shown = length($a) > 30 ? substr($a, 0, 20) . '...' : $a;
        $shown =~ s/\n/\\n/g;
        err_is api(POST => '/auth/register', json => { email => $a }, finished => 1), 400, 'invalid_email', "/register with address '$shown'";
    }
    err_is api(POST => '/auth/register', json => { email => 'bad30@example.com', group => 'no spaces allowed' }, finished => 1), 400, undef, '/register with an invalid group';
    # every email in the mailbox but the control's: as many as before the bad requests
    $t->assert_nothing_sent(qr/./, count => $before, name => 'no email was sent for any bad request');

    # bad exchange bodies answer 400 and leave the token unspent
    my $e = addr('badx');
    my $tok = $t->request_token($e);
    for my $b (['unknown field', qq({"token":"$tok","extra":"x"})], ['array token', qq({"token":["$tok"]})],
               ['number token', '{"token":12345}'], ['no token', '{}'], ['duplicate token', qq({"token":"$tok","token":"$tok"})],
               ['trailing garbage', qq({"token":"$tok"},)], ['invalid UTF-8', qq({"token":"$tok","x":"\xff"})]) {
        my ($name, $body) = @$b;
        err_is api(POST => '/auth/token', body => $body, headers => { 'content-type' => 'application/json' }), 400, undef, "/token $name";
        err_is api(POST => '/auth/session', body => $body, headers => { 'content-type' => 'application/json', origin => $O }), 400, undef, "/session $name";
    }
    my $r = exchange($tok);
    is $r->{status}, 200, 'after the bad exchange bodies the token is still unspent' or diag $r->{content};
    my $cookie = SigninTest::set_cookie_pair($r);

    # bad /sessions/revoke and /logout bodies change nothing
    my $list = api(GET => '/auth/sessions', headers => { cookie => $cookie });
    my $nsess = scalar @{ ($list->{json} || {})->{sessions} || [] };
    ok $nsess >= 1, 'the session is listed';
    my ($cur) = grep { $_->{current} } @{ ($list->{json} || {})->{sessions} || [] };
    for my $b (['number id', '{"id":5}'], ['no id', '{}'], ['unknown field', '{"id":"' . ($cur->{id} // '') . '","x":"y"}'],
               ['not JSON', 'id=1'], ['array', '[]']) {
        my ($name, $body) = @$b;
        err_is api(POST => '/auth/sessions/revoke', body => $body, headers => { 'content-type' => 'application/json', cookie => $cookie, origin => $t->origin }), 400, undef, "/sessions/revoke $name";
    }
    for my $b (['unknown field', '{"x":"y"}'], ['not JSON', 'bye'], ['array', '[]']) {
        my ($name, $body) = @$b;
        err_is api(POST => '/auth/logout', body => $body, headers => { 'content-type' => 'application/json', cookie => $cookie, origin => $t->origin }), 400, undef, "/logout $name";
    }
    $r = api(GET => '/auth/sessions', headers => { cookie => $cookie });
    is $r->{status}, 200, 'the session survived the bad revoke and logout bodies' or diag $r->{content};
    is scalar @{ ($r->{json} || {})->{sessions} || [] }, $nsess, 'and the session list is unchanged';
}

# ---------------------------------------------------------------- body size (signin_body_max 4k)
{
    my $e = addr('size');
    my $json = qq({"email":"$e"});
    my $exact = $json . (' ' x (4096 - length $json));
    is length($exact), 4096, 'a body of exactly 4096 bytes';
    my $r = api(POST => '/auth/register', body => $exact, headers => { 'content-type' => 'application/json' });
    is $r->{status}, 202, 'a body of exactly signin_body_max bytes is accepted' or diag $r->{content};
    my $e2 = addr('size');
    $json = qq({"email":"$e2"});
    my $over = $json . (' ' x (4097 - length $json));
    $r = api(POST => '/auth/register', body => $over, headers => { 'content-type' => 'application/json' }, finished => 1);
    err_is $r, 413, 'payload_too_large', 'a body of 4097 bytes (Content-Length)';
    $r = api(POST => '/auth/register', body => $json . (' ' x 100_000), headers => { 'content-type' => 'application/json' }, finished => 1);
    err_is $r, 413, 'payload_too_large', 'a body of 100 kB (Content-Length)';
    $r = api(POST => '/auth/token', body => '{"token":"' . ('A' x 5000) . '"}', headers => { 'content-type' => 'application/json' });
    err_is $r, 413, 'payload_too_large', '/token with a 5 kB body';

    # chunked: no Content-Length, the limit still holds
    my $e3 = addr('size');
    my $big = qq({"email":"$e3"}) . (' ' x 5000);
    my $chunks = '';
    for (my $i = 0; $i < length $big; $i += 1000) { my $c = substr($big, $i, 1000); $chunks .= sprintf("%x\r\n%s\r\n", length $c, $c) }
    my $raw = $t->raw("POST /auth/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n$chunks" . "0\r\n\r\n");
    my ($st, $h, $body) = parse_raw($raw);
    is $st, 413, 'a chunked body over signin_body_max: 413' or diag $raw;
    like $h->{'content-type'} // '', qr{^application/json}, 'chunked 413: JSON';
    like $body, qr/"code"\s*:\s*"payload_too_large"/, 'chunked 413: code payload_too_large';
    like $h->{'cache-control'} // '', qr/no-store/, 'chunked 413: cache-control no-store';

    my $e4 = addr('size');
    my $small = qq({"email":"$e4"});
    $raw = $t->raw("POST /auth/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                 . sprintf("%x\r\n%s\r\n", 5, substr($small, 0, 5)) . sprintf("%x\r\n%s\r\n", length($small) - 5, substr($small, 5)) . "0\r\n\r\n");
    ($st) = parse_raw($raw);
    is $st, 202, 'a small chunked body is accepted' or diag $raw;
    ok $t->last_email($e4), 'and its email is sent';
    # (the chunked one went by raw(), which reads until nginx closes, like finished => 1)
    $t->assert_nothing_sent([$e2, $e3], name => 'the oversized requests sent no email');
}

$t->done;
done_testing;
