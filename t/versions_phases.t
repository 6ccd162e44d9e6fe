# The version reaches other modules' phases: an auth_request subrequest of a
# controller sees $api_version; keep-alive connections survive the named-location jump; a reload
# replaces the group.
use strict;
use warnings;
use Test::More;
use SigninTest;

sub http_text {
    my ($default) = @_;
    return <<"END";
    api_versions {
        strategy path;
        default $default;
        version v1 { controller \@guarded { GET /secret; } }
        version v2 { controller \@guarded { GET /other; } }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /check { if (\$http_x_v = "v2") { return 204; } return 403; }
        location / { return 200 "upstream \$request_uri\\n"; }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        keepalive_requests 100;
        location /api/ { api_versions_route; }
        location = /auth {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/check;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-V \$api_version;
        }
        location \@guarded {
            auth_request /auth;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
    }
END
}

my $t = SigninTest->new;
$t->run(http => http_text('v1'), wait_ports => [$t->port, $t->port2]);

is $t->req(GET => '/api/v2/secret')->{status}, 200, 'auth_request subrequest sees $api_version v2 (fallback route)';
is $t->req(GET => '/api/v1/secret')->{status}, 403, 'and v1 is refused by the same check';
is $t->req(GET => '/api/secret')->{status}, 403, 'the default v1 is what the subrequest sees';

# three requests on one keep-alive connection, through the group and its errors
my $raw = $t->raw(join('', map { "GET $_ HTTP/1.1\r\nHost: x\r\n\r\n" } '/api/v2/secret', '/api/v2/nothing')
    . "GET /api/v2/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
my @status = $raw =~ m{HTTP/1\.1 (\d{3}) }g;
is_deeply \@status, [200, 404, 200], "keep-alive: three answers on one connection" or diag $raw;
like $raw, qr{upstream /api/other}, 'the third request was routed too';

# a reload builds a new group
$t->reload(http => http_text('v2'));
is $t->req(GET => '/api/secret')->{status}, 200, 'after reload the default is v2';
$t->done;

done_testing;
