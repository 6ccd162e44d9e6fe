# The Debian package (issue #23): ./build.sh deb builds libnginx-mod-http-signin the way Debian's
# own libnginx-mod-* are; lintian reports no error; the package holds the stripped, hardened module
# (only nginx's three symbols exported), its load file, signin-admin and its man page, and depends
# on this nginx's ABI. As root, it is installed: the store directory belongs to www-data (0700),
# Debian's stock /etc/nginx/nginx.conf with the module enabled and a sign-in site passes nginx -t;
# then it is purged.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use lib 't/lib'; use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
for my $tool (qw(dpkg-buildpackage dh_nginx lintian)) {
    plan skip_all => "no $tool (./build.sh deb installs dpkg-dev, debhelper, lintian and nginx-dev)" unless SigninTest::which($tool);
}
# (never the sanitizers' build: a package is what an operator installs)
my $out = `cd '$root' && env -u SIGNIN_SANITIZE SIGNIN_NO_APT=1 ./build.sh deb 2>&1`;
is $? >> 8, 0, './build.sh deb' or diag $out;
my ($deb) = glob("$root/build/deb/libnginx-mod-http-signin_*_*.deb");
ok $deb && -f $deb, 'the package is written' or BAIL_OUT('no package');
my $lintian = do { local $/; open my $fh, '<', "$root/build/deb/lintian.txt" or die; <$fh> };
unlike $lintian, qr/^E:/m, 'lintian reports no error' or diag $lintian;

my $info = `dpkg-deb -I '$deb'`;
my $version = `cat '$root/VERSION'`;
chomp $version;
like $info, qr/^ Version: \Q$version\E$/m, 'the version is VERSION';
my ($abi) = `dpkg-query -W -f='\${Provides}' nginx-common nginx-core nginx 2>/dev/null` =~ /(nginx-abi-[\w.~+-]+)/;
like $info, qr/^ Depends: .*nginx-abi-/m, 'it depends on an nginx ABI';
like $info, qr/^ Depends: .*\Q$abi\E/m, "... this nginx's ($abi)" if $abi;

my $files = `dpkg-deb -c '$deb'`;
for my $f ('./usr/lib/nginx/modules/ngx_http_signin_module.so', './usr/share/nginx/modules-available/mod-http-signin.conf',
           './usr/sbin/signin-admin', './usr/share/man/man8/signin-admin.8.gz',
           './usr/share/doc/libnginx-mod-http-signin/copyright') {
    like $files, qr/ \Q$f\E$/m, "holds $f";
}
my $dir = tempdir(CLEANUP => 1);
system('dpkg-deb', '-x', $deb, $dir) == 0 or die;
my $so = "$dir/usr/lib/nginx/modules/ngx_http_signin_module.so";
like `file '$so'`, qr/stripped/, 'the module is stripped (its debug symbols are in the -dbgsym package)';
ok -s $so < 8 * 1024 * 1024, '... and small (' . int((-s $so) / 1024) . ' KiB)';
like `readelf -d '$so'`, qr/BIND_NOW/, '... linked with BIND_NOW (Debian hardening)';
like `readelf -l '$so'`, qr/GNU_RELRO/, '... and RELRO';
like `nm -D '$so'`, qr/__stack_chk_fail/, '... compiled with the stack protector';
my @exported = sort map { /\s(\S+)$/ ? $1 : () } split /\n/, `nm -D --defined-only '$so'`;
is_deeply \@exported, [qw(ngx_module_names ngx_module_order ngx_modules)], '... exporting only what nginx looks up';
like `cat '$dir/usr/share/nginx/modules-available/mod-http-signin.conf'`, qr/^load_module modules\/ngx_http_signin_module\.so;$/m,
    'the load file';

SKIP: {
    skip 'installing the package needs root', 6 unless $> == 0;
    skip 'nginx of this machine is not Debian\'s', 6 unless -f '/etc/nginx/nginx.conf' && -d '/etc/nginx/modules-enabled';
    skip 'the package is installed already (not touching it)', 6
        if `dpkg-query -W -f='\${Status}' libnginx-mod-http-signin 2>/dev/null` =~ /install ok installed/;
    my $site = '/etc/nginx/conf.d/zz-signin-package-test.conf';
    my $cleanup = sub {
        unlink $site;
        system('dpkg --purge libnginx-mod-http-signin >/dev/null 2>&1');
    };
    local $SIG{__DIE__} = sub { $cleanup->() };
    $out = `DEBIAN_FRONTEND=noninteractive dpkg -i '$deb' 2>&1`;
    is $? >> 8, 0, 'dpkg -i installs it' or diag $out;
    ok -l '/etc/nginx/modules-enabled/50-mod-http-signin.conf' || glob('/etc/nginx/modules-enabled/*signin*'),
        '... and enables the module';
    my @st = stat '/var/lib/nginx-signin';
    is(($st[2] // 0) & 07777, 0700, 'the store directory is mode 0700');
    is scalar(getpwuid($st[4] // 0)), 'www-data', '... and belongs to www-data';
    open my $fh, '>', $site or die;
    print $fh <<'EOF';
signin_store /var/lib/nginx-signin/store;
signin_origin https://signin.example.com;
signin_delivery /_signin/deliver;
server {
    listen 127.0.0.1:8199;
    server_name signin.example.com;
    location /auth/ { signin_api; signin_pages on; }
    location = /_signin/deliver { internal; proxy_pass http://127.0.0.1:8025/send; }
    location /app/ { signin_require on; signin_login_url /auth/; proxy_pass http://127.0.0.1:3000; }
}
EOF
    close $fh;
    $out = `nginx -t 2>&1`;
    is $? >> 8, 0, "Debian's stock nginx.conf with the module and a sign-in site passes nginx -t" or diag $out;
    $cleanup->();
    ok !-e '/usr/lib/nginx/modules/ngx_http_signin_module.so', 'dpkg --purge removes it';
}
done_testing;
