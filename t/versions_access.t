# The access phase of an api_versions_route location runs before the jump to the controller
# (issue #19 item 7): allow/deny, auth_basic and limit_req written there hold, as in any
# location. The version is still resolved in the rewrite phase ($api_version is set). The rules of
# a location under a routing one do not cover versioned paths (nginx -t warns).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
open my $fh, '>', $t->prefix . '/htpasswd' or die;
print $fh "user:{PLAIN}secret\n";
close $fh;
$t->run(http => q{
api_versions {
    strategy path;
    default v1;
    version v1 { controller @v1 { GET /things; GET /admin; } }
}
limit_req_zone $binary_remote_addr zone=api:1m rate=1r/m;
server {
    listen 127.0.0.1:%%PORT%%;
    location /denied/ { deny all; api_versions_route; }
    location /basic/ { auth_basic "api"; auth_basic_user_file %%PREFIX%%/htpasswd; api_versions_route; }
    location /limited/ { limit_req zone=api nodelay; limit_req_status 429; api_versions_route; }
    location /open/ { api_versions_route; }
    location /open/admin { deny all; }
    location @v1 { return 200 "controller v=$api_version\n"; }
}
});

is $t->req(GET => '/denied/v1/things')->{status}, 403, 'deny all in the routing location holds';
is $t->req(GET => '/basic/v1/things')->{status}, 401, 'auth_basic in the routing location holds';
my $r = $t->req(GET => '/basic/v1/things', headers => { authorization => 'Basic dXNlcjpzZWNyZXQ=' });
is $r->{status}, 200, '... and lets the right user through';
like $r->{content}, qr/controller v=v1/, '... to the controller, with $api_version';
is $t->req(GET => '/limited/v1/things')->{status}, 200, 'limit_req: the first request passes';
is $t->req(GET => '/limited/v1/things')->{status}, 429, '... the second is limited';
is $t->req(GET => '/basic/v9/things')->{status}, 404, 'an unknown version prefix is still 404';

# The rules of a location under the routing one hold for its own URIs only: a versioned path is a
# URI of the routing location, and goes to the controller (nginx -t warns: t/versions_config.t).
is $t->req(GET => '/open/admin')->{status}, 403, 'a location under the routing one: its deny holds for its URI';
$r = $t->req(GET => '/open/v1/admin');
is $r->{status}, 200, '... but /open/v1/admin is routed past it';
like $r->{content}, qr/controller v=v1/, '... to the controller';

$t->done;
done_testing;
