# docs/signin-api.yaml, the OpenAPI 3.1 document of the sign-in JSON API (issue #23), checked
# three ways:
#   1. redocly lint (its recommended rules, as a client generator's user runs it) and a
#      structural validation by @seriousme/openapi-schema-validator;
#   2. against the source: every route of the route table in src/ngx/signin/signin_api.cpp (and the
#      provider navigations, and the OpenID provider's OAuth endpoints) is documented with its
#      method, Origin rule and nothing more, and the Error schema's codes are exactly the codes the
#      module can answer (the OAuth endpoints' own refusals are OAuth's OAuthError, or a page);
#   3. against a running nginx with every feature on (passwords, second factors, passkeys, a
#      provider): every documented (path, method) is served (not 404, not 405) and answers a
#      status the document lists, with a body its schema accepts; every other method of those
#      paths gets 405 with an Allow naming the documented ones; and the central flows (register,
#      login, session, token, /me, /sessions, revoke, logout, the second step, passkey options,
#      providers, and the OpenID provider's code flow) answer what the document says, field by
#      field.
# SIGNIN_API_DOC=FILE checks another copy of the document (to see this test fail on a wrong one).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use JSON::PP;
use File::Spec;
use File::Temp qw(tempdir);
use B ();
use Digest::SHA qw(hmac_sha1 sha256);
use MIME::Base64 qw(encode_base64url);
use URI::Escape qw(uri_escape uri_unescape);

my $root = File::Spec->rel2abs($ENV{SIGNIN_ROOT} || '.');
my $doc_file = File::Spec->rel2abs($ENV{SIGNIN_API_DOC} || "$root/docs/signin-api.yaml");
# The document is YAML: redocly (which lints it) also turns it into JSON for Perl's core modules.
if (my $why = SigninTest::missing_node_packages('@redocly/cli')) { plan skip_all => $why }
$ENV{REDOCLY_TELEMETRY} = 'off';
$ENV{REDOCLY_SUPPRESS_UPDATE_NOTICE} = 'true';
my $redocly = "cd \Q$root/t\E && node node_modules/\@redocly/cli/bin/cli.js";
my $JSON = JSON::PP->new->canonical->allow_nonref;

# ---------------------------------------------------------------- 1. lint and validation
{
    my $out = `$redocly lint --format=json \Q$doc_file\E 2>/dev/null`;
    my $st = $? >> 8;
    is $st, 0, 'redocly lint (recommended rules) passes' or diag `$redocly lint \Q$doc_file\E 2>&1`;
    my $report = eval { $JSON->decode($out) } || {};
    is $report->{totals}{errors}, 0, 'redocly lint: no error';
    # The warnings allowed: a provider's start and the consent form's answer are navigations that
    # always redirect (302) or refuse.
    my @warnings = grep {
        !($_->{ruleId} eq 'operation-2xx-response'
          && ($_->{location}[0]{pointer} // '') =~ m{(~1start/get|~1oauth2~1authorize/post)/responses$})
    } @{ $report->{problems} || [] };
    is scalar(@warnings), 0, 'redocly lint: no warning but the redirect-only provider start and consent form'
        or diag explain [map { "$_->{ruleId}: $_->{message} at " . ($_->{location}[0]{pointer} // '') } @warnings];
}
SKIP: {
    my $why = SigninTest::missing_node_packages('@seriousme/openapi-schema-validator');
    skip "OpenAPI validator: $why", 1 if $why;
    my $out = `node \Q$root/t/tools/openapi_validate.mjs\E \Q$doc_file\E 2>&1`;
    like $out, qr/: valid 3\.1/, '@seriousme/openapi-schema-validator: a valid OpenAPI 3.1 document' or diag $out;
}

my $bundle = tempdir('signin_openapi.XXXXXX', TMPDIR => 1, CLEANUP => 1) . '/doc.json';
my $bundled = `$redocly bundle \Q$doc_file\E -o \Q$bundle\E 2>&1`;
open my $bundle_fh, '<', $bundle or SigninTest::give_up('redocly bundles the document', $bundled);
my $doc = do { local $/; $JSON->decode(<$bundle_fh>) };

# ---------------------------------------------------------------- a small JSON Schema checker
# What the document uses: $ref (local), type (one or a list), const, enum, required, properties,
# additionalProperties (false or a schema), items, min/maxItems, min/maxLength, pattern, minimum,
# format date-time, allOf, oneOf (exactly one), anyOf. Returns the list of what does not match.
sub resolve {
    my ($s) = @_;
    my %seen;
    while (ref $s eq 'HASH' && defined $s->{'$ref'}) {
        my $ref = $s->{'$ref'};
        die "a $ref loop\n" if $seen{$ref}++;
        $ref =~ s{^#/}{} or die "not a local \$ref: $ref\n";
        my $n = $doc;
        for my $k (split m{/}, $ref) {
            $k =~ s/~1/\//g; $k =~ s/~0/~/g;
            $n = $n->{$k} // die "unresolved \$ref #/$ref\n";
        }
        $s = $n;
    }
    return $s;
}
sub is_number {
    my ($v) = @_;
    return 0 if !defined $v || ref $v;
    my $f = B::svref_2object(\$v)->FLAGS;
    return ($f & (B::SVp_IOK | B::SVp_NOK)) && !($f & B::SVp_POK);
}
sub type_ok {
    my ($t, $v) = @_;
    return !defined $v if $t eq 'null';
    return JSON::PP::is_bool($v) if $t eq 'boolean';
    return ref $v eq 'HASH' if $t eq 'object';
    return ref $v eq 'ARRAY' if $t eq 'array';
    return defined $v && !ref $v && !is_number($v) if $t eq 'string';
    return is_number($v) && $v == int $v if $t eq 'integer';
    return is_number($v) if $t eq 'number';
    die "unknown type $t\n";
}
sub same { $JSON->encode($_[0]) eq $JSON->encode($_[1]) }
sub check {
    my ($schema, $v, $at) = @_;
    $at //= '$';
    my $s = resolve($schema);
    my @e;
    if (defined $s->{type}) {
        my @t = ref $s->{type} ? @{ $s->{type} } : ($s->{type});
        return "$at: " . $JSON->encode($v) . " is not of type @t" unless grep { type_ok($_, $v) } @t;
    }
    push @e, "$at: " . $JSON->encode($v) . " is not " . $JSON->encode($s->{const}) if exists $s->{const} && !same($v, $s->{const});
    push @e, "$at: " . $JSON->encode($v) . " is not one of " . $JSON->encode($s->{enum})
        if $s->{enum} && !grep { same($v, $_) } @{ $s->{enum} };
    if (ref $v eq 'HASH') {
        push @e, "$at: no \"$_\"" for grep { !exists $v->{$_} } @{ $s->{required} || [] };
        my $props = $s->{properties} || {};
        for my $k (sort keys %$v) {
            if ($props->{$k}) { push @e, check($props->{$k}, $v->{$k}, "$at.$k") }
            elsif (JSON::PP::is_bool($s->{additionalProperties}) && !$s->{additionalProperties}) {
                push @e, "$at: \"$k\" is not documented";
            } elsif (ref $s->{additionalProperties} eq 'HASH') { push @e, check($s->{additionalProperties}, $v->{$k}, "$at.$k") }
        }
    }
    if (ref $v eq 'ARRAY') {
        push @e, "$at: more than $s->{maxItems} items" if defined $s->{maxItems} && @$v > $s->{maxItems};
        push @e, "$at: fewer than $s->{minItems} items" if defined $s->{minItems} && @$v < $s->{minItems};
        if ($s->{items}) { push @e, check($s->{items}, $v->[$_], "$at\[$_]") for 0 .. $#$v }
    }
    if (defined $v && !ref $v && !is_number($v)) {
        push @e, "$at: longer than $s->{maxLength}" if defined $s->{maxLength} && length($v) > $s->{maxLength};
        push @e, "$at: shorter than $s->{minLength}" if defined $s->{minLength} && length($v) < $s->{minLength};
        push @e, "$at: \"$v\" does not match $s->{pattern}" if defined $s->{pattern} && $v !~ /$s->{pattern}/;
        push @e, "$at: \"$v\" is not an RFC 3339 time"
            if ($s->{format} // '') eq 'date-time' && $v !~ /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$/;
    }
    push @e, "$at: below $s->{minimum}" if defined $s->{minimum} && is_number($v) && $v < $s->{minimum};
    push @e, check($_, $v, $at) for @{ $s->{allOf} || [] };
    if ($s->{oneOf}) {
        my $n = grep { !check($_, $v, $at) } @{ $s->{oneOf} };
        push @e, "$at: matches $n of oneOf's schemas, not one" if $n != 1;
    }
    if ($s->{anyOf}) {
        push @e, "$at: matches none of anyOf's schemas" unless grep { !check($_, $v, $at) } @{ $s->{anyOf} };
    }
    return @e;
}
# the checker itself must be able to say no
ok scalar(check({ '$ref' => '#/components/schemas/User' }, { id => 'x' })), 'the schema checker refuses an incomplete user';
ok scalar(check({ '$ref' => '#/components/schemas/Sent' }, { status => 'sent', extra => 1 })),
    '... and an undocumented member';
ok !check({ '$ref' => '#/components/schemas/Sent' }, { status => 'sent' }), '... and accepts {"status": "sent"}';

# ---------------------------------------------------------------- 2. the document and the source
my %ops;    # "METHOD /path" => operation
for my $p (keys %{ $doc->{paths} }) {
    for my $m (keys %{ $doc->{paths}{$p} }) {
        next unless $m =~ /^(get|put|post|delete|options|head|patch|trace)$/;
        $ops{ uc($m) . " $p" } = $doc->{paths}{$p}{$m};
    }
}
is $doc->{openapi}, '3.1.0', 'OpenAPI 3.1.0';
like $doc->{servers}[0]{url}, qr/^\{origin\}/, 'the server is the site\'s origin and the mount';
is $doc->{servers}[0]{variables}{origin}{default}, 'https://app.example.com', '... https://app.example.com';
is $doc->{servers}[0]{variables}{mount}{default}, '/auth', '... /auth';

sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; return <$fh> }
my $api_src = slurp("$root/src/ngx/signin/signin_api.cpp");
my ($table) = $api_src =~ /kRoutes = \{\{(.*?)\n\}\};/s;
$table //= '';
my %routes;    # "METHOD /path" => the route's flags
while ($table =~ /\{"([^"]+)",\s*NGX_HTTP_(GET|POST),\s*\w+,\s*Bucket::\w+,\s*([^}]*)\}/g) {
    $routes{"$2 /$1"} = $3;
}
cmp_ok scalar(keys %routes), '>=', 38, 'the route table of src/ngx/signin/signin_api.cpp is read'
    or diag 'the table\'s format changed: update this test\'s reading of it';
# the provider flow's navigations (provider_flow in src/ngx/signin/signin_providers.cpp), GET only
like slurp("$root/src/ngx/signin/signin_providers.cpp"), qr/step != "start" && step != "callback"/,
    'the provider navigations are start and callback';
$routes{"GET /providers/{name}/$_"} = 'Navigation' for qw(start callback);
# the OpenID provider's OAuth endpoints (is_oauth2_step and oauth2_step in src/ngx/signin/signin_oidc.cpp):
# authorize and end_session are pages whose forms come back by POST (a cookie write: Origin
# required), userinfo takes GET and POST, token and revoke POST only
my $oidc_src = slurp("$root/src/ngx/signin/signin_oidc.cpp");
my ($steps) = $oidc_src =~ /bool is_oauth2_step\(std::string_view path\) \{(.*?)\n\}/s;
is_deeply [sort(($steps // '') =~ /"oauth2\/(\w+)"/g)], [qw(authorize end_session revoke token userinfo)],
    'the OAuth endpoints are authorize, end_session, revoke, token and userinfo';
like $oidc_src, qr/"oauth2\/authorize"\) return page_step.*"oauth2\/end_session"\) return page_step.*"oauth2\/userinfo"\) \{\s*if \(!get && !post\).*if \(!post\) return allow_only\(r, "POST"\)/s,
    '... with their methods';
$routes{"$_ /oauth2/authorize"} = $routes{"$_ /oauth2/end_session"} = $_ eq 'GET' ? 'Navigation' : 'CookieWrite' for qw(GET POST);
$routes{$_} = 'OAuth' for 'GET /oauth2/userinfo', 'POST /oauth2/userinfo', 'POST /oauth2/token', 'POST /oauth2/revoke';
is_deeply [sort keys %ops], [sort keys %routes], 'the document has every route of the module and its method, and nothing else';

my %tag = map { $_->{name} => 1 } @{ $doc->{tags} || [] };
my %opid;
for my $k (sort keys %ops) {
    my $op = $ops{$k};
    ok $op->{operationId} && !$opid{ $op->{operationId} }++, "$k: a unique operationId";
    ok length($op->{summary} // ''), "$k: a summary";
    ok @{ $op->{tags} || [] } && !grep({ !$tag{$_} } @{ $op->{tags} }), "$k: tags that are declared";
    my @four = grep { /^4/ } keys %{ $op->{responses} };
    ok scalar(@four), "$k: 4XX answers";
    # every error answer is the Error shape, with codes the Error schema knows; an OAuth
    # endpoint's may also be OAuth's error (with errors OAuthError knows) or, for the browser, a page
    my @bad;
    my $oauth = $k =~ m{ /oauth2/};
    my $Error = resolve($doc->{components}{schemas}{Error});
    my $OAuthError = resolve($doc->{components}{schemas}{OAuthError} // {});
    for my $st (grep { /^[45]/ } keys %{ $op->{responses} }) {
        my $content = resolve($op->{responses}{$st})->{content} // {};
        next if $oauth && $content->{'text/html'} && !$content->{'application/json'};
        my $schema = resolve($content->{'application/json'}{schema} // {});
        my @parts = ($schema, map { resolve($_) } @{ $schema->{allOf} || [] });
        my @shapes = $schema->{oneOf} ? map { resolve($_) } @{ $schema->{oneOf} } : @parts;
        my $ok = grep { $_ == $Error || ($oauth && $_ == $OAuthError) } @shapes;
        push @bad, "$st is not the Error schema" . ($oauth ? ' nor OAuthError' : '') unless $ok;
        for my $codes (map { $_->{properties}{code}{enum} || () } @parts) {
            push @bad, "$st: unknown code $_" for grep { my $c = $_; !grep { $_ eq $c } @{ $Error->{properties}{code}{enum} } } @$codes;
        }
        for my $errors (map { $_ == $OAuthError ? () : $_->{properties}{error}{enum} || () } @parts) {
            push @bad, "$st: unknown OAuth error $_" for grep { my $c = $_; !grep { $_ eq $c } @{ $OAuthError->{properties}{error}{enum} } } @$errors;
        }
    }
    is_deeply \@bad, [], "$k: every 4xx and 5xx answer is an Error" . ($oauth ? ', an OAuthError or a page' : '');
    # the Origin rules of the route table: cookie writes need it, state changes by cookie too
    my $flags = $routes{$k} // '';
    my @origin = grep { lc($_->{name}) eq 'origin' && $_->{in} eq 'header' } map { resolve($_) } @{ $op->{parameters} || [] };
    if ($flags =~ /CookieWrite/) {
        ok @origin && $origin[0]{required}, "$k: a cookie write: the Origin header is a required parameter";
    } elsif ($flags =~ /SignedInWrite|AdminWrite/) {
        ok @origin && !$origin[0]{required}, "$k: a write by cookie needs the Origin: an optional Origin parameter";
    } else {
        ok !@origin, "$k: no Origin parameter (a present wrong one is refused, as the description says)";
    }
}

# the cookies' names are the module's (src/core/engine.cpp, include/signin/engine.hpp)
my $schemes = $doc->{components}{securitySchemes};
my $names_src = slurp("$root/src/core/engine.cpp") . slurp("$root/include/signin/engine.hpp");
for my $pair ([qw(sessionCookie devSessionCookie)], [qw(browserCookie devBrowserCookie)]) {
    my ($https, $dev) = map { $schemes->{$_}{name} } @$pair;
    like $names_src, qr/"\Q$https\E" : "\Q$dev\E"/, "the cookie schemes $https and $dev are the module's names";
}
is $schemes->{bearerAuth}{scheme}, 'bearer', 'bearer tokens: an http bearer scheme';

# the Error schema's codes are exactly the module's: the engine's (code_name) and the transport's
my %codes;
my ($types_src, $reply_src) = map { slurp("$root/$_") } qw(src/core/types.cpp src/ngx/signin/signin_reply.h);
$codes{$1} = 1 while $types_src =~ /case Code::\w+: return "(\w+)";/g;
$codes{$1} = 1 while $reply_src =~ /HttpError k\w+\{\d+, "(\w+)"\}/g;
$codes{rate_limited} = 1;    # also written by the limits module
is_deeply [sort @{ $doc->{components}{schemas}{Error}{properties}{code}{enum} }], [sort keys %codes],
    'the Error schema lists every code the module answers, and no other';

# ---------------------------------------------------------------- 3. a running nginx
my $t = SigninTest->new;
my $dir = $t->prefix;
my $port3 = $t->port3;
{ open my $fh, '>', "$dir/test.secret" or die; print $fh "test-secret\n"; close $fh; }
# the module as an OpenID provider: a client, and a key to sign its ID tokens with
system("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out $dir/op.pem 2>/dev/null") == 0
    or die 'openssl genpkey';
# The provider's discovery document comes from the fetch location itself: enough for a start
# (which needs only discovery) without a running OpenID provider. Nothing listens on PORT3: a
# callback never gets that far without the flow cookie.
my $issuer = "http://127.0.0.1:$port3";
my $discovery = $JSON->encode({
    issuer => $issuer, authorization_endpoint => "$issuer/authorize", token_endpoint => "$issuer/token",
    jwks_uri => "$issuer/jwks", response_types_supported => ['code'],
    id_token_signing_alg_values_supported => ['RS256'], token_endpoint_auth_methods_supported => ['client_secret_post'],
});
$t->run(http => $t->signin_http(extra => qq{
    signin_limits off;
    signin_passwords on;
    signin_mfa on;
    signin_admin on;
    signin_passkeys on;
    signin_provider test issuer=$issuer client_id=test client_secret_file=$dir/test.secret "label=Test ID";
    signin_provider_fetch /_signin/provider;
    signin_oidc_client app redirect_uri=http://127.0.0.1:8400/cb public;
    signin_oidc_signing_key_file $dir/op.pem;
}, locations => qq{
        location = /_signin/provider {
            internal;
            default_type application/json;
            subrequest_output_buffer_size 64k;
            return 200 '$discovery';
        }
}));
my $origin = $t->origin;
my $O = { origin => $origin };

# An answer checked against the operation: a status it documents, and a body its schema takes.
sub answer_ok {
    my ($k, $r, $name) = @_;
    my $op = $ops{$k};
    my $st = $r->{status};
    my $resp = $op->{responses}{$st} // $op->{responses}{ substr($st, 0, 1) . 'XX' } // $op->{responses}{default};
    my @e;
    if (!$resp) {
        push @e, "$st is not documented (" . join(', ', sort keys %{ $op->{responses} }) . "): $r->{content}";
    } else {
        $resp = resolve($resp);
        my $schema = $resp->{content} && $resp->{content}{'application/json'} && $resp->{content}{'application/json'}{schema};
        my $html = $resp->{content} && $resp->{content}{'text/html'};
        my $body = length($r->{content} // '') && $r->{status} != 204 && $r->{status} != 302;
        my $type = $r->{headers}{'content-type'} // '';
        if ($html && $body && $type =~ m{^text/html}) {
            push @e, 'an HTML page without <html lang' unless $r->{content} =~ /<html lang="/;
        } elsif ($schema && $body) {
            if (($r->{headers}{'content-type'} // '') !~ m{^application/json}) {
                push @e, "content-type " . ($r->{headers}{'content-type'} // 'none') . ", not application/json";
            } elsif (!defined $r->{json}) {
                push @e, "the body is not JSON: $r->{content}";
            } else {
                push @e, check($schema, $r->{json});
            }
        } elsif ($schema && $r->{status} != 302) {
            push @e, 'no body where the document describes one';
        } elsif (!$schema && $body) {
            push @e, "a body the document does not describe: $r->{content}";
        }
        push @e, "302 without a Location" if $st == 302 && !$r->{headers}{location};
    }
    is_deeply \@e, [], $name // "$k answered $st as documented";
    return !@e;
}

my %sample = (name => 'test');    # path parameters: the configured provider
sub url_of { my ($p) = @_; $p =~ s{\{(\w+)\}}{$sample{$1} // 'x'}ge; return "/auth$p" }
sub call {
    my ($m, $p, %o) = @_;
    my %h = %{ $o{headers} || {} };
    return $t->req($m, url_of($p), headers => \%h, ($m eq 'POST' ? (json => $o{json} // {}) : ()));
}

# Every documented operation, with no credential: without an Origin, then with the site's. Both
# served (not 404, not 405), both documented; a public operation never asks for a sign-in, and one
# that needs a session or a bearer token says so (401 unauthenticated).
for my $k (sort keys %ops) {
    my ($m, $p) = split / /, $k, 2;
    my $security = $ops{$k}{security} // $doc->{security};
    my $public = !@$security || grep { !%$_ } @$security;
    my $bearer = grep { exists $_->{bearerAuth} } @$security;
    for my $with_origin (0, 1) {
        my $r = call($m, $p, headers => $with_origin ? $O : {});
        my $what = $with_origin ? 'with the Origin' : 'without an Origin';
        ok $r->{status} != 404 && $r->{status} != 405, "$k $what: served (answered $r->{status})"
            or diag $r->{content};
        answer_ok($k, $r, "$k $what: $r->{status} as documented");
        if ($public) {
            ok !(($r->{json}{code} // '') eq 'unauthenticated'), "$k $what: public, no sign-in asked";
        } elsif ($bearer && $with_origin) {
            is $r->{json}{code}, 'unauthenticated', "$k: needs a session or a bearer token (401 unauthenticated)";
        }
    }
}

# Every POST: its content type and its size are checked first, as the document says (415, 413);
# the OAuth endpoints take forms (userinfo reads no body: its token is in Authorization).
for my $k (grep { /^POST / && $_ ne 'POST /oauth2/userinfo' } sort keys %ops) {
    my (undef, $p) = split / /, $k, 2;
    my $r = $t->req(POST => url_of($p), headers => { %$O, 'content-type' => 'text/plain' }, body => '{}');
    is $r->{status}, 415, "$k as text/plain: 415";
    answer_ok($k, $r, "$k as text/plain: documented");
    $r = $p =~ m{^/oauth2/}
        ? $t->req(POST => url_of($p), headers => { %$O, 'content-type' => 'application/x-www-form-urlencoded' },
                  body => 'x=' . ('a' x 5000))
        : $t->req(POST => url_of($p), headers => $O, json => '{"x": "' . ('a' x 5000) . '"}');
    is $r->{status}, 413, "$k with 5 KB: 413";
    answer_ok($k, $r, "$k with 5 KB: documented");
}

# The reverse: every other method of a documented path is refused with 405 and an Allow naming the
# documented methods (a GET route also takes HEAD).
my %paths;
for my $k (keys %ops) { my ($m, $p) = split / /, $k, 2; push @{ $paths{$p} }, $m }
for my $p (sort keys %paths) {
    my %doc_m = map { $_ => 1 } @{ $paths{$p} };
    my $allow = join ', ', map { $_ eq 'GET' ? ('GET', 'HEAD') : $_ } sort keys %doc_m;
    for my $m (grep { !$doc_m{$_} } qw(GET POST PUT DELETE PATCH)) {
        my $r = $t->req($m, url_of($p), headers => $O);
        is $r->{status}, 405, "$m $p (not documented): 405";
        is $r->{headers}{allow}, $allow, "$m $p: Allow: $allow";
        is $r->{json}{code}, 'method_not_allowed', "$m $p: method_not_allowed";
    }
    my $head = $t->req(HEAD => url_of($p), headers => $O);
    if ($doc_m{GET}) {
        is $head->{status}, call(GET => $p, headers => $O)->{status}, "HEAD $p: answered as GET (the document says so)";
    } else {
        is $head->{status}, 405, "HEAD $p: 405 (no GET)";
    }
}
is $t->req(GET => '/auth/no-such-endpoint')->{status}, 404, 'a path that is not documented: 404';

# ---------------------------------------------------------------- the central flows
my $n = 0;
sub addr { $n++; return "openapi$n\@example.com" }
sub cookies_of {
    my ($r) = @_;
    my $sc = $r->{headers}{'set-cookie'} // [];
    my %c;
    for (ref $sc ? @$sc : $sc) { my ($k, $v) = /^([^=]+)=([^;]*)/ or next; $c{$k} = $v }
    return \%c;
}
my $session_cookie = $schemes->{devSessionCookie}{name};
my $browser_cookie = $schemes->{devBrowserCookie}{name};

# register, the session cookie, /me, /sessions
my $ann = addr();
my $r = $t->req(POST => '/auth/register', json => { email => $ann });
answer_ok('POST /register', $r);
my $m = $t->last_email($ann) or SigninTest::give_up("an email reaches $ann");
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => $O);
answer_ok('POST /session', $r);
is $r->{status}, 200, 'POST /session {token}: 200';
my $jar = cookies_of($r);
ok $jar->{$session_cookie}, "the session cookie is $session_cookie, as the devSessionCookie scheme says";
ok $jar->{$browser_cookie}, "... and the browser cookie $browser_cookie";
my $cookie = "$session_cookie=$jar->{$session_cookie}; $browser_cookie=$jar->{$browser_cookie}";
my $C = { cookie => $cookie, origin => $origin };
for my $get (qw(/me /sessions /account /mfa /passkeys /providers/linked /accounts /providers /.well-known/jwks.json)) {
    $r = $t->req(GET => "/auth$get", headers => $C);
    is $r->{status}, 200, "GET $get by cookie: 200";
    answer_ok("GET $get", $r);
}
is $t->req(GET => '/auth/me', headers => $C)->{json}{email}, $ann, 'GET /me: the user';
is scalar(@{ $t->req(GET => '/auth/accounts', headers => $C)->{json}{accounts} }), 1, 'GET /accounts: one account';
$r = $t->req(POST => '/auth/passkeys/register/options', json => {}, headers => $C);
is $r->{status}, 200, 'POST /passkeys/register/options from a fresh session: 200';
answer_ok('POST /passkeys/register/options', $r);
$r = $t->req(POST => '/auth/passkeys/login/options', json => {});
answer_ok('POST /passkeys/login/options', $r);

# login, its code, a bearer token; every GET by bearer
$r = $t->req(POST => '/auth/login', json => { email => $ann });
is $r->{status}, 202, 'POST /login: 202';
answer_ok('POST /login', $r);
$r = $t->req(POST => '/auth/login', json => { email => addr() });
is_deeply [$r->{status}, $r->{json}], [202, { status => 'sent' }], 'POST /login of an unknown address: the same 202';
$m = $t->last_email($ann, count => 2) or SigninTest::give_up("a second email reaches $ann");
$r = $t->req(POST => '/auth/token', json => { email => $ann, code => $m->{code} });
is $r->{status}, 200, 'POST /token {email, code}: 200';
answer_ok('POST /token', $r);
my $B = { authorization => "Bearer $r->{json}{access_token}" };
for my $get (qw(/me /sessions /account /mfa /passkeys /providers/linked /accounts)) {
    $r = $t->req(GET => "/auth$get", headers => $B);
    answer_ok("GET $get", $r, "GET $get by bearer: $r->{status} as documented");
}
is $t->req(GET => '/auth/accounts', headers => $B)->{json}{code}, 'invalid_request', 'GET /accounts by bearer: 400 (documented)';
$r = $t->req(POST => '/auth/email/change', json => { email => addr() }, headers => $B);
is $r->{status}, 202, 'POST /email/change: 202';
answer_ok('POST /email/change', $r);

# the OpenID provider's code flow by a public client with PKCE: the consent page, its form, the
# code's exchange, userinfo, revocation and a reused code, each answered as documented
{
    my $verifier = encode_base64url(join '', map { chr int rand 256 } 1 .. 32);
    my $challenge = encode_base64url(sha256($verifier));
    my $cb = 'http://127.0.0.1:8400/cb';
    my $query = "response_type=code&client_id=app&redirect_uri=" . uri_escape($cb) .
                "&scope=openid%20email&state=s1&code_challenge=$challenge&code_challenge_method=S256";
    $r = $t->req(GET => "/auth/oauth2/authorize?$query", headers => { cookie => $cookie });
    is $r->{status}, 200, 'GET /oauth2/authorize signed in: the consent page';
    answer_ok('GET /oauth2/authorize', $r);
    $r = $t->req(POST => '/auth/oauth2/authorize', body => 'decision=allow&query=' . uri_escape($query),
                 headers => { %$C, 'content-type' => 'application/x-www-form-urlencoded' });
    is $r->{status}, 302, 'POST /oauth2/authorize allow: a redirect';
    answer_ok('POST /oauth2/authorize', $r);
    my ($code) = ($r->{headers}{location} // '') =~ /[?&]code=([^&]+)/;
    ok $code, '... with a code';
    my $form = { 'content-type' => 'application/x-www-form-urlencoded' };
    my $exchange = "grant_type=authorization_code&client_id=app&code=$code&redirect_uri=" . uri_escape($cb) .
                   "&code_verifier=$verifier";
    $r = $t->req(POST => '/auth/oauth2/token', body => $exchange, headers => $form);
    is $r->{status}, 200, 'POST /oauth2/token: 200';
    answer_ok('POST /oauth2/token', $r);
    my $access = $r->{json}{access_token} // '';
    for my $m (qw(GET POST)) {
        $r = $t->req($m => '/auth/oauth2/userinfo', headers => { authorization => "Bearer $access" });
        is $r->{status}, 200, "$m /oauth2/userinfo: 200";
        answer_ok("$m /oauth2/userinfo", $r);
    }
    is $r->{json}{email}, $ann, '... the account\'s address';
    $r = $t->req(POST => '/auth/oauth2/token', body => $exchange, headers => $form);
    is_deeply [$r->{status}, $r->{json}{error}], [400, 'invalid_grant'], 'the code again: 400 invalid_grant';
    answer_ok('POST /oauth2/token', $r, 'POST /oauth2/token with a used code: documented');
    $r = $t->req(POST => '/auth/oauth2/token', body => $exchange =~ s/client_id=app&//r, headers => { %$form, authorization => 'Basic eDp5' });
    answer_ok('POST /oauth2/token', $r, 'POST /oauth2/token with a client that does not exist: documented');
    is $r->{headers}{'www-authenticate'}, 'Basic realm="oauth2"', '... 401 with WWW-Authenticate: Basic';
    $r = $t->req(POST => '/auth/oauth2/revoke', body => "client_id=app&token=$access", headers => $form);
    is $r->{status}, 200, 'POST /oauth2/revoke: 200';
    answer_ok('POST /oauth2/revoke', $r);
    $r = $t->req(GET => '/auth/oauth2/userinfo', headers => { authorization => "Bearer $access" });
    is $r->{status}, 401, 'GET /oauth2/userinfo with the revoked token: 401';
    answer_ok('GET /oauth2/userinfo', $r, 'GET /oauth2/userinfo with a revoked token: documented');
    like $r->{headers}{'www-authenticate'} // '', qr/^Bearer error="invalid_token"/, '... WWW-Authenticate: Bearer error="invalid_token"';
    $r = $t->req(GET => "/auth/oauth2/authorize?response_type=code&client_id=app&redirect_uri=" . uri_escape('http://127.0.0.1:8400/other'));
    is $r->{status}, 400, 'GET /oauth2/authorize with a redirect URI not registered: 400, a page';
    answer_ok('GET /oauth2/authorize', $r, 'GET /oauth2/authorize refused on a page: documented');
    $r = $t->req(GET => "/auth/oauth2/authorize?response_type=token&client_id=app&redirect_uri=" . uri_escape($cb) . "&state=s2");
    is $r->{status}, 302, 'GET /oauth2/authorize with another response_type: a redirect';
    like $r->{headers}{location} // '', qr/^\Q$cb\E\?.*error=unsupported_response_type/, '... to the client with the error';
    $r = $t->req(GET => '/auth/oauth2/end_session?client_id=app', headers => { cookie => $cookie });
    is $r->{status}, 200, 'GET /oauth2/end_session without a hint: the question';
    answer_ok('GET /oauth2/end_session', $r);
    $r = $t->req(POST => '/auth/oauth2/end_session', body => 'decision=deny&query=client_id%3Dapp',
                 headers => { %$C, 'content-type' => 'application/x-www-form-urlencoded' });
    is $r->{status}, 302, 'POST /oauth2/end_session deny: back to the account page, still signed in';
    answer_ok('POST /oauth2/end_session', $r);
}

# revoke the bearer session by cookie, then sign out
my ($bearer_session) = grep { $_->{kind} eq 'bearer' } @{ $t->req(GET => '/auth/sessions', headers => $C)->{json}{sessions} };
$r = $t->req(POST => '/auth/sessions/revoke', json => { id => $bearer_session->{id} }, headers => $C);
is $r->{status}, 204, 'POST /sessions/revoke: 204';
answer_ok('POST /sessions/revoke', $r);
$r = $t->req(GET => '/auth/me', headers => $B);
is $r->{status}, 401, 'the revoked bearer token: 401';
is $r->{headers}{'www-authenticate'}, 'Bearer', '... with WWW-Authenticate: Bearer (the Unauthenticated answer\'s header)';
answer_ok('GET /me', $r);
$r = $t->req(POST => '/auth/sessions/revoke', json => { id => $bearer_session->{id} }, headers => $C);
is $r->{status}, 404, 'revoking it again: 404';
answer_ok('POST /sessions/revoke', $r);
$r = $t->req(POST => '/auth/logout', json => {}, headers => $C);
is $r->{status}, 204, 'POST /logout: 204';
answer_ok('POST /logout', $r);
is cookies_of($r)->{$session_cookie}, '', '... the session cookie is cleared';
$r = $t->req(GET => '/auth/me', headers => $C);
is $r->{status}, 401, 'the ended session: 401';
answer_ok('GET /me', $r);

# A second factor: set up (TOTP computed here, RFC 6238), the sign-in's 202 and its second step.
sub base32_decode {
    my ($s) = @_;
    (my $bits = join '', map { sprintf '%05b', index('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', $_) } split //, uc $s) =~ s/(.{8})/chr oct "0b$1"/ge;
    return substr $bits, 0, int(length($s) * 5 / 8);
}
sub totp {
    my ($secret, $at) = @_;
    my $h = hmac_sha1(pack('NN', 0, int(($at // time) / 30)), base32_decode($secret));
    my $o = ord(substr $h, -1) & 15;
    return sprintf '%06d', (unpack('N', substr $h, $o, 4) & 0x7fffffff) % 1_000_000;
}
my $bea = addr();
my $token = $t->request_token($bea);
$r = $t->req(POST => '/auth/token', json => { token => $token });
my $BB = { authorization => "Bearer $r->{json}{access_token}" };
$r = $t->req(POST => '/auth/mfa/totp/setup', json => {}, headers => $BB);
is $r->{status}, 200, 'POST /mfa/totp/setup: 200';
answer_ok('POST /mfa/totp/setup', $r);
$r = $t->req(POST => '/auth/mfa/totp/confirm', json => { code => totp($r->{json}{secret}) }, headers => $BB);
is $r->{status}, 200, 'POST /mfa/totp/confirm with the current code: 200';
answer_ok('POST /mfa/totp/confirm', $r);
my @recovery = @{ $r->{json}{recovery_codes} || [] };
is scalar(@recovery), 10, '... 10 recovery codes';
$t->req(POST => '/auth/login', json => { email => $bea });
$m = $t->last_email($bea, count => 2) or SigninTest::give_up("a second email reaches $bea");
$r = $t->req(POST => '/auth/session', json => { email => $bea, code => $m->{code} }, headers => $O);
is $r->{status}, 202, 'POST /session for an account with a second factor: 202';
answer_ok('POST /session', $r);
$r = $t->req(POST => '/auth/mfa/verify', json => { mfa_token => $r->{json}{mfa_token}, recovery_code => $recovery[0] },
    headers => $O);
is $r->{status}, 200, 'POST /mfa/verify with a recovery code: 200';
answer_ok('POST /mfa/verify', $r);
$r = $t->req(GET => '/auth/mfa', headers => { cookie => "$session_cookie=" . cookies_of($r)->{$session_cookie} });
is_deeply [$r->{json}{totp}, $r->{json}{recovery_codes_left}], [JSON::PP::true, 9], 'GET /mfa: on, 9 codes left';
answer_ok('GET /mfa', $r);

# The provider: listed, and its start redirects to the provider's authorization endpoint.
$r = $t->req(GET => '/auth/providers');
is_deeply $r->{json}, { providers => [{ name => 'test', label => 'Test ID' }] }, 'GET /providers: the configured provider';
$r = $t->req(GET => '/auth/providers/test/start?return_to=/app/');
is $r->{status}, 302, 'GET /providers/test/start: 302';
like $r->{headers}{location} // '', qr{^\Q$issuer\E/authorize\?}, '... to the provider\'s authorization endpoint';
ok cookies_of($r)->{svc_dev_oidc}, '... with the flow cookie';
answer_ok('GET /providers/{name}/start', $r);
is $t->req(GET => '/auth/providers/nobody/start')->{status}, 404, 'an unknown provider: 404 (documented)';

$t->done;
done_testing;
