# The README's example (two legacy upstreams behind one group), a whole nginx.conf, runs as
# written and answers as the README says. Only what a test machine needs is changed: the module
# under test, the pid file, logs and temporary files in the test's prefix, the upstreams and the
# port made local, and two servers added that stand in for the upstreams. Everything else,
# events { } and every directive of the group, is the README's text.
use strict;
use warnings;
use Test::More;
use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
open my $fh, '<', "$root/README.md" or die "README.md: $!";
my $readme = do { local $/; <$fh> };
my ($section) = $readme =~ /<!-- versions:begin -->(.*?)<!-- versions:end -->/s or die 'no versions section';
my ($conf) = $section =~ /```nginx\n(.*?)```/s or die 'no nginx example';

like $conf, qr/^load_module modules\/ngx_http_signin_module\.so;$/m, 'the example loads the module';
like $conf, qr/server 10\.0\.0\.10:8080;/, 'the example names the legacy upstream';
like $conf, qr/server 10\.0\.0\.20:9000;/, 'the example names the users upstream';
my $t = SigninTest->new;
$conf =~ s{^load_module modules/ngx_http_signin_module\.so;}
          {load_module %%MODULE%%;\npid %%PREFIX%%/nginx.pid;\nerror_log %%PREFIX%%/error.log info;}m;
my $inside = "    access_log %%PREFIX%%/access.log;\n"
    . join('', map { "    ${_}_temp_path %%PREFIX%%/temp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi))
    . <<'END';
    server { listen 127.0.0.1:%%PORT2%%; location / { return 200 "legacy $request_uri v=$http_x_api_version\n"; } }
    server { listen 127.0.0.1:%%PORT3%%; location / { return 200 "users $request_uri v=$http_x_api_version\n"; } }
END
ok $conf =~ s/^(http \{\n)/$1$inside/m, 'the example has an http block';
$conf =~ s/server 10\.0\.0\.10:8080;/server 127.0.0.1:%%PORT2%%;/;
$conf =~ s/server 10\.0\.0\.20:9000;/server 127.0.0.1:%%PORT3%%;/;
$conf =~ s/listen 80;/listen 127.0.0.1:%%PORT%%;/;
my $file = $t->prefix . '/nginx.conf';
open my $out, '>', $file or die "$file: $!";
print $out $t->expand($conf);
close $out;
$t->run(file => $file, workers => 1, wait_ports => [$t->port, $t->port2, $t->port3]);

my $r = $t->req(GET => '/api/v3/users/7');
is $r->{content}, "users /api/users/7 v=v3\n", 'GET /api/v3/users/7: @users as declared by v2, version segment gone';
is $t->req(POST => '/api/v3/users', json => {})->{content}, "legacy /api/users v=v3\n", 'POST /api/v3/users: @legacy from v1';
is $t->req(GET => '/api/v1/users/7')->{content}, "legacy /api/users/7 v=v1\n", 'GET /api/v1/users/7: @legacy';
is $t->req(GET => '/api/users/7')->{content}, "legacy /api/users/7 v=v1\n", 'no version: the default v1';
is $t->req(GET => '/api/v3/users')->{content}, "users /api/users v=v3\n", 'GET /api/v3/users: v3 own route';
$r = $t->req(PUT => '/api/v2/users/7', json => {});
is $r->{status}, 405, 'PUT /api/v2/users/7: 405';
is $r->{headers}{allow}, 'GET, HEAD, PATCH, DELETE', 'with the Allow the README shows';
$r = $t->req(GET => '/api/v2/orders');
is $r->{content}, "legacy /api/orders v=v2\n", 'v2 answers GET /orders from v1';
is $r->{headers}{deprecation}, '@' . 1780272000, 'v2 is deprecated on 2026-06-01';
is $r->{headers}{sunset}, 'Tue, 01 Jun 2027 00:00:00 GMT', 'and sunset on 2027-06-01';
is $t->req(GET => '/api/health')->{content}, "ok\n", 'the outside location answers';
is $t->req(GET => '/api/v1/health')->{status}, 404, 'and is not reachable under a version prefix';
is $t->req(GET => '/api/openapi.json?version=v2')->{json}{info}{title}, 'Acme API', 'the OpenAPI location';
$t->done;

done_testing;
