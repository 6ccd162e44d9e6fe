# Header strategy: missing and unknown versions,
# the default, Vary on every response added to the upstream's without duplicates, fallback on/off.
use strict;
use warnings;
use Test::More;
use SigninTest;
use VersionsTest qw(group_http);

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }
sub vh { my ($v) = @_; (headers => { 'X-API-Version' => $v }) }

# ---------------------------------------------------------------- default v1, fallback on
my $t = SigninTest->new;
$t->run(http => group_http(strategy => 'header X-API-Version', default => 'v1'), wait_ports => [$t->port, $t->port2]);

my $r = $t->req(GET => '/api/users/7', vh('v2'));
is $r->{content}, "ctl=users_v2 uri=/api/users/7 v=v2 cv=v2\n", 'the header names the version; the path is untouched';
is h($r, 'vary'), 'Accept-Encoding, x-api-version', 'Vary names the header, appended to the upstream Vary';
is h($r, 'x-api-version'), 'v2', '$api_version';
$r = $t->req(GET => '/api/users/7', headers => { 'x-api-version' => '  v3 ' });
is $r->{content}, "ctl=users_v2 uri=/api/users/7 v=v3 cv=v2\n", 'per-route fallback; the value is trimmed';
is $t->req(GET => '/api/users', vh('v3'))->{content}, "ctl=legacy_v1 uri=/api/users v=v3 cv=v1\n",
    'fallback to the oldest version';

$r = $t->req(GET => '/api/users/7');
is $r->{content}, "ctl=legacy_v1 uri=/api/users/7 v=v1 cv=v1\n", 'no header: the default';
is h($r, 'vary'), 'Accept-Encoding, x-api-version', 'Vary on a default answer too';

$r = $t->req(GET => '/api/users/7', vh('v9'));
is $r->{status}, 400, 'unknown version: 400';
is_deeply $r->{json}, {error => 'unknown API version v9', code => 'unknown_api_version'}, 'unknown version body';
is h($r, 'vary'), 'x-api-version', 'Vary on the error too';
is h($r, 'cache-control'), 'no-store', 'errors are no-store';
$r = $t->req(GET => '/api/users/7', vh('x"y\\z'));
is $r->{json}{error}, 'unknown API version x"y\\z', 'the echoed version is JSON-escaped';

$r = $t->req(GET => '/api/nothing', vh('v2'));
is $r->{status}, 404, 'no route: 404';
is h($r, 'vary'), 'x-api-version', 'Vary on the 404';
$r = $t->req(PATCH => '/api/users', vh('v2'), json => {});
is $r->{status}, 405, '405 in a header group';
is h($r, 'allow'), 'GET, HEAD, POST', 'Allow with inherited methods';
is $t->req(GET => '/api/v2/users/7', vh('v2'))->{status}, 404,
    'a path segment that looks like a version is just a path with the header strategy';
$r = $t->req(GET => '/api/health');
ok !defined h($r, 'vary'), 'no Vary outside the group';
$t->done;

# ---------------------------------------------------------------- no default, fallback off
my $n = SigninTest->new;
$n->run(http => group_http(strategy => 'header x-api-version', fallback => 'off'), wait_ports => [$n->port, $n->port2]);
$r = $n->req(GET => '/api/users/7');
is $r->{status}, 400, 'no header and no default: 400';
is_deeply $r->{json}, {error => 'missing API version', code => 'missing_api_version'}, 'missing version body';
is h($r, 'vary'), 'x-api-version', 'Vary on the missing-version answer';
is $n->req(GET => '/api/no/such/route')->{status}, 400, 'missing version wins over a path with no route';
is $n->req(GET => '/api/users/7', headers => { 'x-api-version' => '' })->{status}, 400, 'an empty header is missing';
is $n->req(GET => '/api/users/7', vh('v9'))->{json}{error}, 'unknown API version v9', 'unknown without a default';
is $n->req(GET => '/api/users/7', vh('v3'))->{status}, 404, 'fallback off: v3 does not answer v2 routes';
is $n->req(GET => '/api/users/7', vh('v2'))->{content}, "ctl=users_v2 uri=/api/users/7 v=v2 cv=v2\n",
    'fallback off: own route';
$n->done;

# ---------------------------------------------------------------- an upstream that already varies
my $u = SigninTest->new;
$u->run(http => <<'END', wait_ports => [$u->port, $u->port2]);
    api_versions {
        strategy header x-api-version;
        default v1;
        version v1 { controller @same { GET /same; } controller @star { GET /star; } controller @none { GET /none; } }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        location /same { add_header Vary "Accept-Encoding, X-API-Version"; return 200 "same\n"; }
        location /star { add_header Vary "*"; return 200 "star\n"; }
        location /none { return 200 "none\n"; }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        location / { api_versions_route; }
        location @same { proxy_pass http://127.0.0.1:%%PORT2%%; }
        location @star { proxy_pass http://127.0.0.1:%%PORT2%%; }
        location @none { proxy_pass http://127.0.0.1:%%PORT2%%; }
    }
END
is h($u->req(GET => '/same'), 'vary'), 'Accept-Encoding, X-API-Version', 'never duplicated (case-insensitive)';
is h($u->req(GET => '/star'), 'vary'), '*', 'Vary: * is left alone';
is h($u->req(GET => '/none'), 'vary'), 'x-api-version', 'added when the upstream sends none';
$u->done;

done_testing;
