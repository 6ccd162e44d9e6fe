# Custom strategy: any nginx value names the version;
# a custom resolver adds no Vary.
use strict;
use warnings;
use Test::More;
use SigninTest;
use VersionsTest qw(group_http);

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }

# the version comes from a cookie, or else a query argument
my $resolver = <<'END';
    map $cookie_api $resolved_version { "" $arg_v; default $cookie_api; }
END
my $t = SigninTest->new;
$t->run(http => $resolver . group_http(strategy => 'custom $resolved_version', default => 'v1'),
    wait_ports => [$t->port, $t->port2]);
my $r = $t->req(GET => '/api/users/7?v=v2');
is $r->{content}, "ctl=users_v2 uri=/api/users/7?v=v2 v=v2 cv=v2\n", 'version from the query argument';
is h($r, 'vary'), 'Accept-Encoding', 'a custom resolver adds no Vary';
$r = $t->req(GET => '/api/users/7?v=v2', headers => { cookie => 'api=v3' });
is $r->{content}, "ctl=users_v2 uri=/api/users/7?v=v2 v=v3 cv=v2\n", 'version from the cookie, with fallback';
is $t->req(GET => '/api/users/7')->{content}, "ctl=legacy_v1 uri=/api/users/7 v=v1 cv=v1\n", 'empty value: default';
$r = $t->req(GET => '/api/users/7?v=v7');
is $r->{status}, 400, 'unknown: 400';
is_deeply $r->{json}, {error => 'unknown API version v7', code => 'unknown_api_version'}, 'unknown body';
ok !defined h($r, 'vary'), 'no Vary on the custom 400';
$t->done;

my $n = SigninTest->new;
$n->run(http => $resolver . group_http(strategy => 'custom $resolved_version', fallback => 'off'),
    wait_ports => [$n->port, $n->port2]);
$r = $n->req(GET => '/api/users/7');
is $r->{status}, 400, 'no value, no default: 400';
is_deeply $r->{json}, {error => 'missing API version', code => 'missing_api_version'}, 'missing body';
is $n->req(GET => '/api/none/here')->{status}, 400, 'missing even for a path with no route';
is $n->req(GET => '/api/users?v=v2')->{status}, 404, 'fallback off: v2 does not inherit GET /users';
$n->done;

done_testing;
