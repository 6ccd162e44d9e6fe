# nginx.conf.example is the product's front door (./build.sh run serves it): it must pass
# nginx -t with the built module, start, and sign a person in, and its API versions answer.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
my $root = $ENV{SIGNIN_ROOT} || '.';
my $prefix = $t->prefix;
mkdir "$prefix/$_" for qw(modules html);
symlink $ENV{SIGNIN_MODULE}, "$prefix/modules/ngx_http_signin_module.so" or die "symlink: $!";
system('cp', "$root/examples/index.html", "$prefix/html/") == 0 or die;
open my $in, '<', "$root/nginx.conf.example" or die;
my $conf = do { local $/; <$in> };
my $port = $t->port;
$conf =~ s/127\.0\.0\.1:8080/127.0.0.1:$port/g;
$conf =~ s/^error_log stderr info;/error_log $prefix\/error.log info;/m or die 'no error_log line';
$conf =~ s/^worker_processes 2;/worker_processes 2;\ndaemon on;/m or die;
# the harness stops nginx through <prefix>/nginx.pid and looks for its workers there
$conf =~ s{^pid \S+;}{pid $prefix/nginx.pid;}m or die 'no pid line';
open my $out, '>', "$prefix/nginx.conf" or die;
print $out $conf;
close $out;

my $nginx = $ENV{NGINX_BIN} || '/usr/sbin/nginx';
my $test = `$nginx -p $prefix -c $prefix/nginx.conf -t 2>&1`;
is $? >> 8, 0, 'nginx.conf.example passes nginx -t' or diag $test;
$t->run(file => "$prefix/nginx.conf", workers => 2);
ok $t->master_pid, 'nginx.conf.example started, its pid in the prefix';

is $t->req(GET => '/')->{status}, 200, 'the demo page is served at /';
my $cookie = $t->sign_in('example@example.com');
ok $cookie, 'a person signs in through /auth/ with the dev mailbox';
my $r = $t->req(GET => '/app/', headers => { cookie => $cookie });
like $r->{content}, qr/legacy app: hello example\@example\.com/, 'the protected legacy app knows who it is';
is $t->req(GET => '/app/')->{status}, 401, 'and is closed to visitors';
$r = $t->req(GET => '/app/x', headers => { accept => 'text/html' });
is $r->{status}, 302, 'a signed-out browser is sent to sign in';
like $r->{headers}{location}, qr{^http://127\.0\.0\.1:\d+/auth/\?return_to=/app/x$}, '... at the sign-in page, and back';
$r = $t->req(GET => '/auth/');
like $r->{content}, qr{<h1 id="title"[^>]*>Sign in</h1>}, 'the ready-made sign-in page is at /auth/';
is $t->req(GET => '/auth/account', headers => { accept => 'text/html' })->{status}, 200, '... and the account page at /auth/account';
$r = $t->req(GET => '/api/v2/users');
is $r->{headers}{'x-controller-version'}, 'v1', 'GET /api/v2/users falls back to v1';
like $r->{content}, qr/asked for v2/, '... with $api_version still v2';
$r = $t->req(GET => '/admin/emails');
is scalar @{ $r->{json}{emails} || [] }, 10, 'the email previews list every purpose (ten)';
$t->done;
my @left = $t->leftover_pids;
ok !@left, 'no nginx process of the example is left after done' or diag `ps -o pid,ppid,args -p @{[ join ',', @left ]}`;
done_testing;
