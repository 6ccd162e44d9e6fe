# One build: a plain nginx source tree builds the module with nothing built before, the way a
# user without build.sh does it:
#   ./configure --with-compat --with-threads --add-dynamic-module=<checkout> && make modules
# from a fresh copy of the checkout (no build/ directory). Then: glue and core were compiled with
# the same C++ standard and warnings, the module's dynamic symbol table holds only what nginx looks
# up in a module (also for the build.sh module under test), a second `make modules` relinks
# nothing, and Debian's nginx loads the module and accepts a configuration that uses it.
# Takes a minute or two (the whole core compiles); every command is bounded by `timeout`, with
# room for a machine busy with other builds (a niced configure took over 300 s under load). A
# step that fails or runs out of time is one failing test, and the steps that need it are not
# run: never a BAIL_OUT, which would end every other file's run as well.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use Cwd qw(abs_path);
use lib 't/lib'; use SigninTest;    # (only give_up and skip_rest: this file starts no nginx of its own)

my $plain_src = $ENV{SIGNIN_PLAIN_NGINX_SRC} || '/usr/share/nginx/src';
my $nginx = '/usr/sbin/nginx';    # Debian's nginx 1.22.1, the tree's own binary
plan skip_all => "no nginx source tree at $plain_src (Debian: apt-get install nginx-dev)"
    unless -x "$plain_src/configure";
plan skip_all => "no $nginx to load the module into" unless -x $nginx;
for my $tool (qw(cmake make nm tar)) {
    plan skip_all => "$tool is not installed" unless grep { -x "$_/$tool" } split /:/, $ENV{PATH};
}

my $root = abs_path($ENV{SIGNIN_ROOT} || '.');
# a plain build, also when the suite runs sanitized (config would read SIGNIN_SANITIZE)
delete $ENV{SIGNIN_SANITIZE};
my $tmp = tempdir('ngx_signin_plain.XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{TEST_KEEP});
# searchable by nginx's worker user, as the harness's prefixes are: nginx -t refuses a store
# that user cannot reach (a temporary directory is made 0700)
chmod 0755, $tmp or die "chmod $tmp: $!";
my ($tree, $checkout) = ("$tmp/nginx", "$tmp/ngx_signin");
mkdir $_ or die "$_: $!" for $tree, $checkout;

# Bounded, quiet, niced (the rest of the suite runs beside it): returns (exit status, output).
# timeout(1) answers 124 when the limit ran out (and KILLs what is left 30 s after its TERM);
# the output then says so, for the test that reports the step.
my $TIMED_OUT = 124;
sub sh {
    my ($dir, $limit, $cmd) = @_;
    open my $ph, '-|', 'timeout', '-k', 30, $limit, 'nice', '-n', '10', 'sh', '-c', 'cd "$0" && exec 2>&1 && ' . $cmd, $dir
        or die "sh: $!";
    my $out = do { local $/; <$ph> } // '';
    close $ph;
    my $rc = $? >> 8;
    $out .= "\n(stopped: still running after $limit s)" if $rc == $TIMED_OUT || $rc == 128 + 9;
    return ($rc, $out);
}
sub timed_out { $_[0] == $TIMED_OUT || $_[0] == 128 + 9 }

# Limits: copies are quick; configure and make get what a loaded 2-core machine needs, and more.
my ($COPY_S, $CONFIGURE_S, $MAKE_S) = (300, 900, 1800);
sub tail_of { my @l = split /\n/, $_[0]; join "\n", @l[($#l > 40 ? $#l - 40 : 0) .. $#l] }

# the checkout as git knows it (tracked files and new ones not ignored), else everything but the
# build outputs
my ($rc, $out);
if (-e "$root/.git") {
    ($rc, $out) = sh($root, $COPY_S, "git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C '$checkout'");
} else {
    ($rc, $out) = sh($root, $COPY_S, "tar --exclude=./build --exclude=node_modules -cf - . | tar -xf - -C '$checkout'");
}
is $rc, 0, 'a fresh copy of the checkout' or SigninTest::skip_rest($out);
ok !-e "$checkout/build", '... with no build directory in it';
($rc, $out) = sh($plain_src, $COPY_S, "tar -cf - . | tar -xf - -C '$tree'");
is $rc, 0, "a copy of the plain nginx tree $plain_src" or SigninTest::skip_rest($out);

($rc, $out) = sh($tree, $CONFIGURE_S, "./configure --with-compat --add-dynamic-module='$checkout'");
# (a configure stopped by its limit is not a refusal: that is the one failure to report)
SigninTest::give_up("./configure without --with-threads finished within $CONFIGURE_S s", tail_of($out))
    if timed_out($rc);
isnt $rc, 0, 'an nginx without --with-threads is refused by the module\'s config';
like $out, qr/ngx_signin needs nginx configured --with-threads/, '... saying what to add';
($rc, $out) = sh($tree, $CONFIGURE_S, "./configure --with-compat --with-threads --add-dynamic-module='$checkout'");
is $rc, 0, './configure --with-compat --with-threads --add-dynamic-module=<checkout>'
    or SigninTest::skip_rest("configure failed:\n" . tail_of($out));
# Debian's tree has no top-level Makefile (an upstream tree's only forwards to objs/Makefile)
($rc, $out) = sh($tree, $MAKE_S, 'make -j2 -f objs/Makefile modules');
is $rc, 0, 'make modules'
    or SigninTest::skip_rest(tail_of($out));
my $so = "$tree/objs/ngx_http_signin_module.so";
ok -f $so, 'the module is built: objs/ngx_http_signin_module.so'
    or SigninTest::skip_rest();

# CMake's flags for the engine's parts (cmake/parts.cmake) and the glue (ngx_signin) of that build
my %flags;
my @parts = qw(signin_core signin_store signin_version);
for my $target (@parts, 'ngx_signin') {
    my $file = "$tree/objs/addon/ngx_signin/CMakeFiles/$target.dir/flags.make";
    open my $fh, '<', $file or do { fail "$file: $!"; next };
    ($flags{$target}) = map { /^CXX_FLAGS = (.*)$/ ? $1 : () } <$fh>;
}
is $flags{$_}, $flags{ngx_signin}, "glue and $_ compile with the same flags" for @parts;
like $flags{ngx_signin} // '', qr/(?=.*-std=c\+\+20)(?=.*-Wconversion)(?=.*-Wshadow)(?=.*-Werror)(?=.*-fvisibility=hidden)/,
    '... C++20, our warnings as errors, hidden symbols';

# nginx's ngx_load_module() looks up ngx_modules, ngx_module_names and ngx_module_order and
# nothing else. The version script (src/ngx/exports.map) makes everything else local, including
# what the linker itself defines (_init, _fini, _edata, _end, __bss_start), so the list is exact.
my @want = qw(ngx_module_names ngx_module_order ngx_modules);
sub exported {
    my ($file) = @_;
    my @syms = sort map { (split ' ')[-1] } grep { /\S/ } split /\n/, `nm -D --defined-only '$file' 2>&1`;
    return @syms;
}
is_deeply [exported($so)], \@want, 'nm -D --defined-only: ngx_modules, ngx_module_names, ngx_module_order only'
    or diag join ' ', exported($so);
if ($ENV{SIGNIN_MODULE}) {
    is_deeply [exported($ENV{SIGNIN_MODULE})], \@want, "... and the same for the module under test ($ENV{SIGNIN_MODULE})"
        or diag join ' ', exported($ENV{SIGNIN_MODULE});
}

# incremental: nothing changed, nothing relinked
my $mtime = (stat $so)[9];
sleep 1;
($rc, $out) = sh($tree, $MAKE_S, 'make -j2 -f objs/Makefile modules');
is $rc, 0, 'a second make modules';
is +(stat $so)[9], $mtime, '... does not relink an unchanged module' or diag tail_of($out);

# Debian's nginx loads it and accepts the directives
my $prefix = "$tmp/prefix";
mkdir $prefix;
mkdir "$prefix/$_" for qw(logs temp);
open my $fh, '>', "$prefix/nginx.conf" or die;
print $fh <<"EOF";
load_module $so;
pid $prefix/nginx.pid;
error_log $prefix/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $prefix/temp/body;
    proxy_temp_path $prefix/temp/proxy;
    fastcgi_temp_path $prefix/temp/fastcgi;
    uwsgi_temp_path $prefix/temp/uwsgi;
    scgi_temp_path $prefix/temp/scgi;
    signin_store $prefix/store;
    signin_origin http://127.0.0.1:8080;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:8080;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
}
EOF
close $fh;
$out = `timeout 60 $nginx -p $prefix -c $prefix/nginx.conf -t 2>&1`;
is $? >> 8, 0, "$nginx -t loads it (signin_store, signin_origin, signin_api)" or diag $out;

done_testing;
