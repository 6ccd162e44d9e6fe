package VersionsTest;

# Shared configuration of the t/versions_*.t files: a version group with three versions in front
# of one local "legacy" upstream that echoes what it received, so each test can see which
# controller answered, with which path and which headers.
#
#   v1: @legacy_v1  GET /users, GET /users/:id, POST /users, GET /
#   v2: @users_v2   GET /users/{id}, DELETE /users/{id}       deprecated 2026-01-01, sunset 2026-12-31
#   v3: @orders_v3  GET /orders, GET /orders/{id}/lines/{line}
#
# The upstream (PORT2) answers "ctl=<controller> uri=<path it got> v=<X-V> cv=<X-CV>" and sends
# "Vary: Accept-Encoding" so the group's Vary is seen appended to an upstream's.

use strict;
use warnings;
use Exporter 'import';
our @EXPORT_OK = qw(group_http);

sub controller {
    my ($name) = @_;
    return <<"END";
        location \@$name {
            proxy_set_header X-Ctl $name;
            proxy_set_header X-V \$api_version;
            proxy_set_header X-CV \$api_controller_version;
            add_header X-Front-Request-Uri \$request_uri always;
            add_header X-Front-Uri \$uri always;
            add_header X-Api-Version \$api_version always;
            add_header X-Api-Controller-Version \$api_controller_version always;
            add_header X-Api-Major \$api_major always;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
END
}

sub group_http {
    my (%o) = @_;
    my $strategy = $o{strategy} // 'path';
    my $default  = defined $o{default} ? "default $o{default};" : '';
    my $fallback = defined $o{fallback} ? "fallback $o{fallback};" : '';
    my $extra    = $o{extra} // '';
    my $text = <<"END";
    map \$api_version \$api_major { default none; v1 one; v2 two; v3 three; }
    log_format versions '\$request_uri api=[\$api_version] ctl=[\$api_controller_version]';
    access_log %%PREFIX%%/versions.log versions;

    api_versions {
        strategy $strategy;
        $default
        $fallback
        version v1 {
            controller \@legacy_v1 { GET /users; GET /users/:id; POST /users; GET /; }
        }
        version v2 deprecated=2026-01-01 sunset=2026-12-31 {
            controller \@users_v2 { GET "/users/{id}"; DELETE "/users/{id}"; }
        }
        version v3 {
            controller \@orders_v3 { GET /orders; GET "/orders/{id}/lines/{line}"; }
        }
    }

    server {
        listen 127.0.0.1:%%PORT2%%;
        location / {
            add_header Vary Accept-Encoding;
            return 200 "ctl=\$http_x_ctl uri=\$request_uri v=\$http_x_v cv=\$http_x_cv\\n";
        }
    }

    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }
        location = /api/health { return 200 "health v=[\$api_version]\\n"; }
        location /plain { return 200 "plain v=[\$api_version] cv=[\$api_controller_version]\\n"; }
        location = /openapi.json { api_versions_openapi "Test API"; }
$extra
END
    $text .= controller($_) for qw(legacy_v1 users_v2 orders_v3);
    return $text . "    }\n";
}

1;
