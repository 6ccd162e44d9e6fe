# A version retired with `sunset=DATE gone`: after the date every request for it is answered 410
# version_retired, while newer versions still fall back to the routes it declares. A sunset
# without `gone`, or one still to come, only announces.
use strict;
use warnings;
use Test::More;
use SigninTest;

sub h { my ($r, $n) = @_; my $v = $r->{headers}{$n}; ref $v ? join(', ', @$v) : $v }

my $t = SigninTest->new;
my $http = <<'END';
    api_versions {
        strategy path;
        default v3;
        version v1 deprecated=2019-06-01 sunset=2020-01-01 gone {
            controller @legacy { GET /users; GET /users/:id; POST /users; }
        }
        version v2 deprecated=2020-01-01 sunset=2099-01-01T12:00:00Z gone {
            controller @legacy { GET /orders; }
        }
        version v3 sunset=2021-01-01 {
            controller @legacy { GET /things; }
        }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }
        location @legacy {
            return 200 "legacy uri=$uri v=$api_version cv=$api_controller_version\n";
        }
    }
END
$t->run(http => $http);

for my $case (['GET', '/api/v1/users'], ['GET', '/api/v1/users/7'], ['POST', '/api/v1/users'],
              ['GET', '/api/v1/no/such/route'], ['DELETE', '/api/v1/users']) {
    my ($method, $path) = @$case;
    my $r = $t->req($method => $path, $method eq 'POST' ? (json => {name => 'x'}) : ());
    is $r->{status}, 410, "$method $path of the retired v1: 410";
    is_deeply $r->{json}, {error => 'API version v1 was retired on 2020-01-01', code => 'version_retired'},
        "... with the version_retired body";
}
my $r = $t->req(GET => '/api/v1/users');
like h($r, 'content-type'), qr{^application/json}, 'the 410 is JSON';
is h($r, 'cache-control'), 'no-store', 'the 410 is no-store';
is h($r, 'sunset'), 'Wed, 01 Jan 2020 00:00:00 GMT', 'the 410 says when it was retired (Sunset)';

$r = $t->req(GET => '/api/v3/users/7');
is $r->{status}, 200, 'v3 still falls back to the retired v1\'s route';
is $r->{content}, "legacy uri=/api/users/7 v=v3 cv=v1\n", '... answered by v1\'s declaration';
$r = $t->req(GET => '/api/v2/users');
is $r->{status}, 200, 'v2, retired only in 2099, answers (and falls back to v1 too)';
is h($r, 'sunset'), 'Thu, 01 Jan 2099 12:00:00 GMT', '... announcing its sunset';
$r = $t->req(GET => '/api/v3/things');
is $r->{status}, 200, 'v3\'s sunset has passed but it is not "gone": it answers';
$r = $t->req(GET => '/api/things');
is $r->{content}, "legacy uri=/api/things v=v3 cv=v3\n", 'no version: the default v3';

done_testing;
