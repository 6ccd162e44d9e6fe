# Accept strategy: application/vnd.<vendor>.<version>+json.
use strict;
use warnings;
use Test::More;
use SigninTest;
use VersionsTest qw(group_http);

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }
sub acc { (headers => { accept => $_[0] }) }

my $t = SigninTest->new;
$t->run(http => group_http(strategy => 'accept acme', default => 'v1'), wait_ports => [$t->port, $t->port2]);
my $r = $t->req(GET => '/api/users/7', acc('application/vnd.acme.v2+json'));
is $r->{content}, "ctl=users_v2 uri=/api/users/7 v=v2 cv=v2\n", 'the vendor media type names the version';
is h($r, 'vary'), 'Accept-Encoding, accept', 'Vary: accept appended to the upstream Vary';
$r = $t->req(GET => '/api/users/7', acc('text/html;q=0.5, Application/VND.ACME.v3+JSON; q=1'));
is $r->{content}, "ctl=users_v2 uri=/api/users/7 v=v3 cv=v2\n", 'found among several ranges, type case-insensitive';
is $t->req(GET => '/api/users', acc('application/vnd.acme.v3+json'))->{content},
    "ctl=legacy_v1 uri=/api/users v=v3 cv=v1\n", 'fallback per route';
$r = $t->req(GET => '/api/users/7', acc('application/json'));
is $r->{content}, "ctl=legacy_v1 uri=/api/users/7 v=v1 cv=v1\n", 'no vendor type: the default';
is h($r, 'vary'), 'Accept-Encoding, accept', 'Vary on the default answer';
$r = $t->req(GET => '/api/users/7', acc('application/vnd.acme.V2+json'));
is $r->{status}, 400, 'unknown version (case-sensitive): 400';
is_deeply $r->{json}, {error => 'unknown API version V2', code => 'unknown_api_version'}, 'unknown version body';
is h($r, 'vary'), 'accept', 'Vary on the 400';
is $t->req(GET => '/api/users/7', acc('application/vnd.other.v2+json'))->{content},
    "ctl=legacy_v1 uri=/api/users/7 v=v1 cv=v1\n", 'another vendor is not a version';
is $t->req(GET => '/api/orders', acc('application/vnd.acme.v2+json'))->{status}, 404, 'no route in v2: 404';
$t->done;

my $n = SigninTest->new;
$n->run(http => group_http(strategy => 'accept acme', fallback => 'off'), wait_ports => [$n->port, $n->port2]);
$r = $n->req(GET => '/api/users/7', acc('*/*'));
is $r->{status}, 400, 'no version, no default: 400';
is_deeply $r->{json}, {error => 'missing API version', code => 'missing_api_version'}, 'missing body';
is h($r, 'vary'), 'accept', 'Vary on the missing answer';
is $n->req(GET => '/api/nowhere')->{status}, 400, 'missing wins over no route';
is $n->req(GET => '/api/users', acc('application/vnd.acme.v2+json'))->{status}, 404, 'fallback off';
is $n->req(GET => '/api/orders', acc('application/vnd.acme.v3+json'))->{content},
    "ctl=orders_v3 uri=/api/orders v=v3 cv=v3\n", 'fallback off: own route';
$n->done;

done_testing;
