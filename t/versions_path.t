# Path strategy: routing, per-route fallback,
# stripping the version segment, 404s, 405 with Allow, variables in other modules, headers.
use strict;
use warnings;
use Test::More;
use SigninTest;
use VersionsTest qw(group_http);

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }

# ---------------------------------------------------------------- with a default version
my $t = SigninTest->new;
$t->run(http => group_http(strategy => 'path', default => 'v1'), wait_ports => [$t->port, $t->port2]);

my $r = $t->req(GET => '/api/v2/users/7?x=1');
is $r->{status}, 200, 'v2 route answers';
is $r->{content}, "ctl=users_v2 uri=/api/users/7?x=1 v=v2 cv=v2\n",
    'controller of v2; the upstream path keeps the mount, drops the version, keeps the query';
is h($r, 'x-front-request-uri'), '/api/v2/users/7?x=1', '$request_uri keeps the version segment';
is h($r, 'x-front-uri'), '/api/users/7', '$uri is rewritten';
is h($r, 'x-api-version'), 'v2', '$api_version in add_header';
is h($r, 'x-api-major'), 'two', '$api_version through a map';
is h($r, 'vary'), 'Accept-Encoding', 'path strategy adds no Vary (the upstream one is kept)';
ok !defined h($r, 'api-supported-versions'), 'no api-supported-versions without api_versions_report';
is h($r, 'deprecation'), '@1767225600', 'RFC 9745 Deprecation of v2 (2026-01-01)';
is h($r, 'sunset'), 'Thu, 31 Dec 2026 00:00:00 GMT', 'RFC 8594 Sunset of v2';

# fallback is per route, newest first; $api_version stays the requested version
$r = $t->req(GET => '/api/v3/users/7');
is $r->{content}, "ctl=users_v2 uri=/api/users/7 v=v3 cv=v2\n", 'v3 falls back to v2 for GET /users/{id}';
is h($r, 'x-api-version'), 'v3', '$api_version stays requested after fallback';
is h($r, 'x-api-controller-version'), 'v2', '$api_controller_version names the answering version';
ok !defined h($r, 'deprecation'), 'v3 is not deprecated';
$r = $t->req(GET => '/api/v3/users');
is $r->{content}, "ctl=legacy_v1 uri=/api/users v=v3 cv=v1\n", 'v3 falls back to v1 for GET /users';
$r = $t->req(POST => '/api/v2/users', json => {});
is $r->{content}, "ctl=legacy_v1 uri=/api/users v=v2 cv=v1\n", 'POST falls back separately from GET';
$r = $t->req(GET => '/api/v3/orders/5/lines/2');
is $r->{content}, "ctl=orders_v3 uri=/api/orders/5/lines/2 v=v3 cv=v3\n", 'two parameters';
$r = $t->req(GET => '/api/v2/orders');
is $r->{status}, 404, 'a version never answers a newer version\'s route';
is_deeply $r->{json}, {error => 'not found', code => 'not_found'}, '404 body';
is h($r, 'cache-control'), 'no-store', '404 is no-store';
like h($r, 'content-type'), qr{^application/json}, '404 is JSON';
is h($r, 'deprecation'), '@1767225600', 'errors of a deprecated version carry Deprecation too';

# no version: the default
$r = $t->req(GET => '/api/users/9');
is $r->{content}, "ctl=legacy_v1 uri=/api/users/9 v=v1 cv=v1\n", 'no version segment: the default v1';
is h($r, 'x-front-uri'), '/api/users/9', 'nothing stripped without a version segment';
$r = $t->req(GET => '/api/v1');
is $r->{content}, "ctl=legacy_v1 uri=/api/ v=v1 cv=v1\n", '/api/v1 is the root route of v1';

# unknown version prefix: not a version, so a path of the default version; no route there
$r = $t->req(GET => '/api/v9/users');
is $r->{status}, 404, 'unknown version prefix: 404';
is $r->{json}{code}, 'not_found', 'unknown version prefix: not_found, not a 400';
$r = $t->req(GET => '/api/V2/users/7');
is $r->{status}, 404, 'version names are case-sensitive';

# 405 with Allow listing what the version answers there (own and inherited)
$r = $t->req(PUT => '/api/v2/users/7', json => {});
is $r->{status}, 405, 'method not answered: 405';
is h($r, 'allow'), 'GET, HEAD, DELETE', 'Allow lists the methods of v2 at /users/{id}';
is_deeply $r->{json}, {error => 'method not allowed', code => 'method_not_allowed'}, '405 body';
$r = $t->req(DELETE => '/api/v3/users', json => {});
is h($r, 'allow'), 'GET, HEAD, POST', 'Allow includes inherited methods';
$r = $t->req(HEAD => '/api/v2/users/7');
is $r->{status}, 200, 'HEAD answers where GET does';
is h($r, 'x-api-controller-version'), 'v2', 'HEAD goes to the GET controller';

# locations outside the group match first, never see a version, are not under a version prefix
$r = $t->req(GET => '/api/health');
is $r->{content}, "health v=[]\n", 'a location outside the group answers and sees no version';
ok !defined h($r, 'api-supported-versions'), 'no group headers outside the group';
$r = $t->req(GET => '/api/v1/health');
is $r->{status}, 404, 'an outside location is not reachable under a version prefix';
$r = $t->req(GET => '/plain');
is $r->{content}, "plain v=[] cv=[]\n", 'variables are empty on unversioned routes';

$t->stop;
open my $fh, '<', $t->prefix . '/versions.log' or die $!;
my @log = <$fh>;
ok((grep { m{^/api/v3/users/7 api=\[v3\] ctl=\[v2\]$} } @log), 'log_format sees both variables');
ok((grep { m{^/plain api=\[\] ctl=\[\]$} } @log), 'log_format: empty outside the group');
$t->done;

# ---------------------------------------------------------------- no default
my $n = SigninTest->new;
$n->run(http => group_http(strategy => 'path'), wait_ports => [$n->port, $n->port2]);
$r = $n->req(GET => '/api/users');
is $r->{status}, 404, 'no default: an unversioned path is 404';
is $r->{json}{code}, 'not_found', 'no default, path strategy: never 400 missing';
is $n->req(GET => '/api/v9/users')->{status}, 404, 'no default: unknown prefix 404';
is $n->req(GET => '/api/v1/users')->{content}, "ctl=legacy_v1 uri=/api/users v=v1 cv=v1\n",
    'no default: versioned paths route';
$n->done;

# ---------------------------------------------------------------- fallback off
my $o = SigninTest->new;
$o->run(http => group_http(strategy => 'path', fallback => 'off'), wait_ports => [$o->port, $o->port2]);
is $o->req(GET => '/api/v3/users/7')->{status}, 404, 'fallback off: v3 answers only its own routes';
is $o->req(GET => '/api/v2/users')->{status}, 404, 'fallback off: v2 does not inherit GET /users';
$r = $o->req(POST => '/api/v2/users/7', json => {});
is $r->{status}, 405, 'fallback off: 405 at an own route';
is h($r, 'allow'), 'GET, HEAD, DELETE', 'fallback off: Allow from v2 alone';
is $o->req(GET => '/api/v2/users/7')->{content}, "ctl=users_v2 uri=/api/users/7 v=v2 cv=v2\n",
    'fallback off: own route answers';
$o->done;

done_testing;
