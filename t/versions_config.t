# Configuration errors of the version group stop `nginx -t` with the file and line, so a
# mistake is found before the server runs. Each case marks the offending line with "#here". A location
# that versioned paths pass by is warned about.
use strict;
use warnings;
use Test::More;
use SigninTest;

my $t = SigninTest->new;

my $servers = <<'END';
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }
        location @a { return 200; }
        location @b { return 200; }
    }
END

sub check {
    my ($name, $http, $message) = @_;
    my ($status, $out) = $t->nginx_t(http => $http);
    isnt $status, 0, "$name: nginx -t fails";
    open my $fh, '<', $t->prefix . '/nginx.conf' or die $!;
    my $line = 0;
    my $at;
    while (<$fh>) { $line++; $at = $line if /#here/ }
    die "$name: no #here marker" unless $at;
    like $out, qr/\[emerg\].*\Q$message\E.* in \S*nginx\.conf:$at\b/, "$name: message and line $at";
}

sub group { my ($body) = @_; "    api_versions {\n$body\n    }\n" . $servers }

check('empty version name', group(<<'END'), 'empty version name');
        version v1 { controller @a { GET /x; } }
        version "" { controller @a { GET /y; } }   #here
END

check('version declared twice', group(<<'END'), 'version "v1" is declared twice');
        version v1 { controller @a { GET /x; } }
        version v1 { controller @a { GET /y; } }   #here
END

check('default never declared', group(<<'END'), 'default version "v3" is never declared');
        default v3;   #here
        version v1 { controller @a { GET /x; } }
END

check('unknown strategy', group(<<'END'), 'invalid strategy "query"');
        strategy query v;   #here
        version v1 { controller @a { GET /x; } }
END

check('header strategy without a name', group(<<'END'), 'invalid strategy "header"');
        strategy header;   #here
        version v1 { controller @a { GET /x; } }
END

check('duplicate route in one version', group(<<'END'), 'duplicate route "GET /users/{uid}" in version "v1"');
        version v1 {
            controller @a { GET /users/:id; }
            controller @b { POST /users/:id; GET "/users/{uid}"; }   #here
        }
END

check('unknown method', group(<<'END'), 'unknown method "FETCH"');
        version v1 { controller @a {
            FETCH /x;   #here
        } }
END

check('route with an empty segment', group(<<'END'), 'route "/a//b" has an empty segment');
        version v1 { controller @a {
            GET /a//b;   #here
        } }
END

check('sunset before deprecation', group(<<'END'), 'sunset is before deprecation');
        version v1 deprecated=2026-06-01 sunset=2026-01-01 {   #here
            controller @a { GET /x; }
        }
END

check('invalid date', group(<<'END'), 'invalid date in "sunset=2026-02-30"');
        version v1 sunset=2026-02-30 {   #here
            controller @a { GET /x; }
        }
END

check('gone without a sunset', group(<<'END'), 'version "v1": "gone" needs sunset=DATE');
        version v1 deprecated=2026-06-01 gone {   #here
            controller @a { GET /x; }
        }
END

check('gone twice', group(<<'END'), 'duplicate "gone"');
        version v1 sunset=2026-06-01 gone gone {   #here
            controller @a { GET /x; }
        }
END

check('an unknown version parameter', group(<<'END'), 'invalid parameter "retired" (deprecated=DATE, sunset=DATE or gone)');
        version v1 sunset=2026-06-01 retired {   #here
            controller @a { GET /x; }
        }
END

check('controller that is not a named location', group(<<'END'), 'controller "legacy" must name a named location');
        version v1 {
            controller legacy { GET /x; }   #here
        }
END

check('controller with no named location', group(<<'END'), 'controller "@missing" of version "v2" names no named location');
        version v1 { controller @a { GET /x; } }
        version v2 {
            controller @missing { GET /y; }   #here
        }
END

check('second group', group(<<'END') . <<'END2', 'a second "api_versions" block');
        version v1 { controller @a { GET /x; } }
END
    api_versions {   #here
        version v2 { controller @a { GET /x; } }
    }
END2

check('group directive in the wrong block', group(<<'END'), '"strategy" directive is not allowed here');
        version v1 {
            strategy path;   #here
            controller @a { GET /x; }
        }
END

check('api_versions_route without a group', <<'END', '"api_versions_route" needs an "api_versions" block');
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }   #here
    }
END

check('api_versions_route in a regex location without a mount',
    group("        version v1 { controller \@a { GET /x; } }") =~ s/\z/    server { listen 127.0.0.1:%%PORT2%%; location ~ ^\/r\/ { api_versions_route; } }   #here\n/r,
    'outside a prefix location needs the mount path');

# With the path strategy, a versioned path is a URI of the routing location: "location /api/admin"
# (its deny, auth_basic, signin_require) is not on the way of /api/v1/admin. nginx -t names every
# location under a routing one that some route reaches, with the line of api_versions_route.
{
    my $http = <<'END';
    api_versions {
        strategy path;
        default v1;
        version v1 { controller @a { GET /admin; GET /users/:id; GET /x; } }
        version v2 { controller @b { GET /reports/monthly; } }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }   #route
        location /api/admin { deny all; }
        location = /api/users/7 { deny all; }
        location /api/reports/ { deny all; }
        location = /api/health { return 200; }
        location = /api/openapi.json { api_versions_openapi; }
        location /apiary/ { deny all; }
        location @a { return 200; }
        location @b { return 200; }
    }
END
    my ($status, $out) = $t->nginx_t(http => $http);
    is $status, 0, 'locations under a routing location: nginx -t passes' or diag $out;
    open my $fh, '<', $t->prefix . '/nginx.conf' or die $!;
    my ($line, $at) = (0);
    while (<$fh>) { $line++; $at = $line if /#route/ }
    like $out, qr{\[warn\] \d+#\d+: location "/api/admin" is bypassed by versioned paths: "/api/v1/admin" \(and below\) is routed by "location /api/" to "\@a".* whose api_versions_route is in \S*nginx\.conf:$at$}m,
        'a prefix location a route reaches: warned, with the line of api_versions_route' or diag $out;
    like $out, qr{\[warn\] \d+#\d+: location "/api/users/7" is bypassed by versioned paths: "/api/v1/users/7" is routed},
        'an exact location a parameter reaches: warned';
    like $out, qr{\[warn\] \d+#\d+: location "/api/reports/" is bypassed by versioned paths: "/api/v2/reports/" \(and below\) is routed by "location /api/" to "\@b"},
        'a route of a later version only: warned with that version';
    unlike $out, qr{location "/api/health"|location "/api/openapi\.json"|location "/apiary/"},
        'locations no route reaches, and a location beside the mount, are not named';

    ($status, $out) = $t->nginx_t(http => $http =~ s/strategy path;/strategy header X-API-Version;/r);
    is $status, 0, 'the header strategy: nginx -t passes';
    unlike $out, qr/is bypassed by versioned paths/, '... and warns of nothing (the URI keeps no version)';
}

# Version changes: each mistake is named at the line of the change that causes it.
check('a change path that is not a JSON Pointer', group(<<'END'), 'a path is a JSON Pointer starting with "/"');
        version v1 { controller @a { GET /x; } }
        version v2 {
            field_added name;   #here
        }
END

check('a rename whose field ends in "*"', group(<<'END'), 'a field\'s path ends in its name, not "*"');
        version v1 { controller @a { GET /x; } }
        version v2 {
            field_renamed /items/* /items/all;   #here
        }
END

check('a default that is not JSON', group(<<'END'), 'default is not JSON (write it as one quoted word): free');
        version v1 { controller @a { GET /x; } }
        version v2 {
            field_added /tier default=free;   #here
        }
END

check('a change on a route no version has', group(<<'END'), 'no version declares the route POST /x of the change on /name');
        version v1 { controller @a { GET /x; } }
        version v2 {
            field_added /name;
            field_removed /name on POST /x;   #here
        }
END

check('a rename onto an existing field', group(<<'END'), 'field_renamed /full_name onto /name, a field that exists already');
        version v1 { controller @a { GET /x; } }
        version v2 { field_added /name; }
        version v3 {
            field_renamed /full_name /name;   #here
        }
END

check('a chain that cannot be inverted', group(<<'END'), 'a version both adds and removes /nickname');
        version v1 { controller @a { GET /x; } }
        version v2 {
            field_added /nickname;
            field_removed /nickname;   #here
        }
END

check('two values mapped onto one', group(<<'END'), 'value_mapped on /status maps two values from or onto');
        version v1 { controller @a { GET /x; } }
        version v2 {
            value_mapped /status active enabled;
            value_mapped /status live enabled;   #here
        }
END

check('a change in the oldest version', group(<<'END'), 'the oldest version has no older one to differ from');
        version v1 {
            controller @a { GET /x; }
            field_added /name;   #here
        }
END

check('an upstream version never declared', group(<<'END'), 'upstream version "v9" is never declared');
        api_versions_upstream_version v9;   #here
        version v1 { controller @a { GET /x; } }
END

check('a change outside a version block', group(<<'END'), '"field_added" directive is not allowed here');
        field_added /name;   #here
        version v1 { controller @a { GET /x; } }
END

check('an invalid body_max', group(<<'END') =~ s/location \/api\/ \{ api_versions_route; \}/location \/api\/ { api_versions_route; api_versions_body_max lots; }   #here/r, 'invalid value');
        version v1 { controller @a { GET /x; } }
END

# a braced parameter must be quoted: nginx itself stops at the "{"
my ($status, $out) = $t->nginx_t(http => group("        version v1 { controller \@a { GET /users/{id}; } }"));
isnt $status, 0, 'an unquoted {param} fails nginx -t';
like $out, qr/unexpected "\{"|unexpected "}"/, 'nginx names the brace';

# and a correct group passes
($status, $out) = $t->nginx_t(http => group(<<'END'));
        strategy header X-API-Version;
        default v2;
        fallback off;
        version v1 deprecated=2026-01-01 sunset=2026-12-31T12:00:00Z { controller @a { GET /x; GET "/x/{id}"; } }
        version v2 { controller @b { GET /x/:id; DELETE /x/:id; } }
END
is $status, 0, 'a valid group passes nginx -t' or diag $out;

# and one with version changes of every kind, scoped and not, and the body limit at each level
($status, $out) = $t->nginx_t(http => "    api_versions_body_max 64k;\n" . group(<<'END') =~ s/location \/api\/ \{ api_versions_route; \}/location \/api\/ { api_versions_route; api_versions_body_max 2m; }/r);
        strategy header X-API-Version;
        api_versions_upstream_version v2;
        version v1 { controller @a { GET /x; GET "/x/{id}"; } }
        version v2 {
            controller @b { GET /x/:id; DELETE /x/:id; }
            field_added /tier 'default={"plan":"free"}';
            field_removed /legacy value=0 on GET /x/:id;
            field_renamed /items/*/name /items/*/title;
            value_mapped /status active enabled on GET "/x/{uid}";
        }
        version v3 {
            field_renamed /tier /plan;
            value_mapped /count 1 2;
        }
END
is $status, 0, 'a group with version changes passes nginx -t' or diag $out;

done_testing;
