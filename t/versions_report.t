# api_versions_report on: the api-supported-versions and api-deprecated-versions headers on every
# answer of a routing location that has it (inherited from http and server, turned off below), at
# the moment of the request: a deprecation date reached moves a version to the deprecated list, a
# version retired with `gone` is in neither.
use strict;
use warnings;
use Test::More;
use SigninTest;

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }

my $t = SigninTest->new;
my $http = <<'END';
    api_versions_report on;
    api_versions {
        strategy header x-api-version;
        default v4;
        version v1 sunset=2020-01-01 gone { controller @legacy { GET /users; } }
        version v2 deprecated=2020-01-01 sunset=2099-01-01 gone { controller @legacy { GET /orders; } }
        version v3 deprecated=2099-01-01 { controller @legacy { GET /things; } }
        version v4 { controller @legacy { GET /widgets; } }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }
        location /quiet/ { api_versions_report off; api_versions_route; }
        location /plain { return 200 "plain\n"; }
        location @legacy { return 200 "legacy v=$api_version\n"; }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        api_versions_report off;
        location /api/ { api_versions_route; }
        location @legacy { return 200 "legacy v=$api_version\n"; }
    }
END
$t->run(http => $http, wait_ports => [$t->port, $t->port2]);

my $r = $t->req(GET => '/api/widgets');
is $r->{status}, 200, 'the default version answers';
is h($r, 'api-supported-versions'), 'v3, v4', 'supported: v3 (deprecated only in 2099) and v4';
is h($r, 'api-deprecated-versions'), 'v2', 'deprecated: v2 (since 2020); the retired v1 in neither';
$r = $t->req(GET => '/api/users', headers => {'x-api-version' => 'v2'});
is $r->{content}, "legacy v=v2\n", 'the deprecated v2 still answers (falling back to v1\'s route)';
is h($r, 'api-supported-versions'), 'v3, v4', '... with the same report';
$r = $t->req(GET => '/api/users', headers => {'x-api-version' => 'v1'});
is $r->{status}, 410, 'the retired v1: 410';
is h($r, 'api-deprecated-versions'), 'v2', '... and the report, telling the client where to go';
$r = $t->req(GET => '/api/nothing', headers => {'x-api-version' => 'v9'});
is $r->{status}, 400, 'an unknown version: 400';
is h($r, 'api-supported-versions'), 'v3, v4', '... with the report too';

$r = $t->req(GET => '/quiet/widgets');
is $r->{status}, 200, 'a routing location with api_versions_report off answers';
ok !defined h($r, 'api-supported-versions'), '... without api-supported-versions';
ok !defined h($r, 'api-deprecated-versions'), '... nor api-deprecated-versions';
$r = $t->req(GET => '/plain');
ok !defined h($r, 'api-supported-versions'), 'a location outside the group reports nothing';
$r = $t->req(GET => '/api/widgets', port => $t->port2);
is $r->{content}, "legacy v=v4\n", 'the server with api_versions_report off routes';
ok !defined h($r, 'api-supported-versions'), '... and reports nothing';

# nginx -t: the directive needs a group
my ($status, $out) = $t->nginx_t(http => <<'END');
    server {
        listen 127.0.0.1:%%PORT%%;
        api_versions_report on;   #here
        location / { return 200; }
    }
END
isnt $status, 0, 'api_versions_report without an api_versions block: nginx -t fails';
open my $fh, '<', $t->prefix . '/nginx.conf' or die $!;
my ($line, $at) = (0);
while (<$fh>) { $line++; $at = $line if /#here/ }
like $out, qr/\[emerg\].*"api_versions_report" needs an "api_versions" block.* in \S*nginx\.conf:$at\b/,
    "... at the directive's line ($at)";

done_testing;
