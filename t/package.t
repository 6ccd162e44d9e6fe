# The Debian package (issue #23): ./build.sh deb builds libnginx-mod-http-signin the way Debian's
# own libnginx-mod-* are; lintian reports no error; the package holds the stripped, hardened module
# (only nginx's three symbols exported), its load file, signin-admin and its man page, and depends
# on this nginx's ABI. As root, it is installed: the store directory belongs to www-data (0700),
# and the README's Deploy section is followed: its site (examples/deploy-debian.conf) in conf.d passes
# nginx -t on Debian's stock nginx.conf, which then serves it: a sign-in over TLS (and HTTP/2) in
# front of an app, the email through the mail relay; then it is purged.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use lib 't/lib'; use SigninTest; use SigninSmtp;

my $root = $ENV{SIGNIN_ROOT} || '.';
for my $tool (qw(dpkg-buildpackage dh_nginx lintian)) {
    plan skip_all => "no $tool (./build.sh deb installs dpkg-dev, debhelper, lintian and nginx-dev)" unless SigninTest::which($tool);
}
# (never the sanitizers' build: a package is what an operator installs)
my $out = `cd '$root' && env -u SIGNIN_SANITIZE SIGNIN_NO_APT=1 ./build.sh deb 2>&1`;
is $? >> 8, 0, './build.sh deb' or diag $out;
my ($deb) = glob("$root/build/deb/libnginx-mod-http-signin_*_*.deb");
ok $deb && -f $deb, 'the package is written' or SigninTest::skip_rest('no package: nothing to check or install');
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
    skip 'installing the package needs root', 27 unless $> == 0;
    skip 'nginx of this machine is not Debian\'s', 27 unless -f '/etc/nginx/nginx.conf' && -d '/etc/nginx/modules-enabled';
    skip 'python3-aiosmtpd is not installed: no mail relay for the README\'s site', 27 unless $SigninSmtp::PY;
    skip 'the package is installed already (not touching it)', 27
        if `dpkg-query -W -f='\${Status}' libnginx-mod-http-signin 2>/dev/null` =~ /install ok installed/;
    # The README's Deploy section as an operator follows it: examples/deploy-debian.conf as the site
    # in conf.d, examples/thread-pool.conf in the main context (here a file of modules-enabled,
    # which Debian's nginx.conf includes there), the store in the package's directory. Only what
    # cannot be real here is replaced: loopback ports for 80, 443, the mail relay and the app, and
    # a self-signed certificate for app.example.com.
    my $dir = tempdir(CLEANUP => 1);
    my $site = '/etc/nginx/conf.d/zz-signin-package-test.conf';
    my $threads = '/etc/nginx/modules-enabled/zz-signin-package-test-thread-pool.conf';
    my ($http, $https, $app, $mail) = map { SigninTest::free_port() } 1 .. 4;
    my $mailer;
    my $stop_nginx = sub {
        my $pid = -f "$dir/nginx.pid" ? do { open my $p, '<', "$dir/nginx.pid"; local $/; <$p> } : undef;
        return unless $pid && $pid =~ /^(\d+)/;
        kill 'QUIT', $1;
        for (1 .. 100) { last unless kill 0, $1; select undef, undef, undef, 0.1 }
        kill 'KILL', $1 if kill 0, $1;
    };
    my $cleanup = sub {
        $stop_nginx->();
        $mailer->stop if $mailer;
        unlink $site, $threads;
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

    my $read = sub { my ($f) = @_; open my $in, '<', $f or die "$f: $!"; local $/; <$in> };
    my $write = sub { my ($f, $text) = @_; open my $o, '>', $f or die "$f: $!"; print $o $text; close $o };
    my $conf = $read->("$root/examples/deploy-debian.conf");
    my %swap = ('server 127.0.0.1:3000;' => "server 127.0.0.1:$app;", 'listen 80;' => "listen 127.0.0.1:$http;",
        'listen 443 ssl http2;' => "listen 127.0.0.1:$https ssl http2;",
        '/etc/letsencrypt/live/app.example.com/fullchain.pem' => "$dir/cert.pem",
        '/etc/letsencrypt/live/app.example.com/privkey.pem' => "$dir/key.pem",
        'smtp://127.0.0.1:10587' => "smtp://127.0.0.1:$mail");
    for my $from (sort keys %swap) {
        ok $conf =~ s/\Q$from\E/$swap{$from}/, "the README's site has $from";
    }
    $conf .= qq{\nserver { listen 127.0.0.1:$app; location / { default_type text/plain; return 200 "app: \$http_x_user_email\\n"; } }\n};
    $write->($site, $conf);
    $write->($threads, $read->("$root/examples/thread-pool.conf"));
    system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=app.example.com "
        . "-addext subjectAltName=DNS:app.example.com -keyout '$dir/key.pem' -out '$dir/cert.pem' >/dev/null 2>&1");
    $out = `nginx -t 2>&1`;
    is $? >> 8, 0, "Debian's stock nginx.conf with the README's site passes nginx -t" or diag $out;
    unlike $out, qr/\[warn\]/, '... without a warning' or diag $out;

    # Served by Debian's nginx.conf itself, less its default site (port 80 on every address) and
    # with the pid and logs in the test's directory.
    my $main = $read->('/etc/nginx/nginx.conf');
    $main =~ s{^\s*include /etc/nginx/sites-enabled/\*;\s*$}{}m;
    $main =~ s{^pid [^;]+;}{pid $dir/nginx.pid;}m or die 'no pid line in nginx.conf';
    $main =~ s{^error_log [^;]+;}{error_log $dir/error.log;}m;
    $main =~ s{access_log [^;]+;}{access_log $dir/access.log;}g;
    $write->("$dir/nginx.conf", $main);
    $mailer = SigninSmtp::Relay->new(port => $mail);
    $out = `nginx -c '$dir/nginx.conf' 2>&1`;
    is $? >> 8, 0, 'nginx starts with it' or diag $out;
    for (1 .. 50) { last if IO::Socket::INET->new(PeerAddr => "127.0.0.1:$https"); select undef, undef, undef, 0.1 }

    my $h2 = `curl -V 2>/dev/null` =~ /\bHTTP2\b/;
    # (status, {lowercased header => value}, body) of one curl request to the site
    my $curl = sub {
        my ($method, $url, %o) = @_;
        my @args = ('-s', '-i', '--max-time', '10', '--cacert', "$dir/cert.pem", '-X', $method,
            '--resolve', "app.example.com:$https:127.0.0.1", '--resolve', "app.example.com:$http:127.0.0.1",
            ($h2 ? '--http2' : ()));
        push @args, '-H', "$_: $o{headers}{$_}" for sort keys %{ $o{headers} || {} };
        push @args, '-H', 'content-type: application/json', '--data-binary', $o{json} if defined $o{json};
        open my $c, '-|', 'curl', @args, $url or die "curl: $!";
        my $raw = do { local $/; <$c> } // '';
        close $c;
        my ($head, $body) = split /\r\n\r\n/, $raw, 2;
        my ($proto, $status) = ($head // '') =~ m{^(HTTP/[\d.]+) (\d+)};
        my %h;
        for (split /\r\n/, $head // '') { push @{ $h{lc $1} }, $2 if /^([^:]+):\s*(.*)$/ }
        $_ = join "\n", @$_ for values %h;  # several Set-Cookie: one per line
        return ($status // 0, \%h, $body // '', $proto // '');
    };
    my $site_url = "https://app.example.com:$https";
    my ($status, $h, $body, $proto) = $curl->(GET => "$site_url/reports", headers => { accept => 'text/html' });
    is $status, 302, 'a signed-out browser at the app (TLS)';
    like $h->{location} // '', qr{^(https://app\.example\.com(:$https)?)?/auth/\?return_to=(%2F|/)reports$}, '... goes to the sign-in page'
        or diag "Location: " . ($h->{location} // 'none');
    is $proto, 'HTTP/2', '... over HTTP/2' if $h2;
    ($status) = $curl->(POST => "$site_url/auth/register", json => '{"email":"ann@example.com"}');
    is $status, 202, 'registering: 202';
    my @received;
    for (1 .. 100) {  # the outbox sends it apart from the request: a bounded wait
        last if @received = $mailer->messages;
        select undef, undef, undef, 0.1;
    }
    my $token = @received ? SigninSmtp::token_of($received[0]) : undef;
    ok $token, '... the mail relay got the email over SMTP, with its sign-in link';
    ($status, $h) = $curl->(POST => "$site_url/auth/session", json => qq({"token":"$token"}),
        headers => { origin => 'https://app.example.com' });
    is $status, 200, 'the token exchanged for a session';
    my ($cookie) = ($h->{'set-cookie'} // '') =~ /^(__Host-svc_session=[^;]+);[^\n]*\bSecure\b/m;
    ok $cookie, '... a __Host- cookie, Secure' or diag "Set-Cookie: " . ($h->{'set-cookie'} // 'none');
    ($status, $h, $body) = $curl->(GET => "$site_url/reports", headers => { cookie => $cookie // '' });
    is $status, 200, 'the app passes';
    is $body, "app: ann\@example.com\n", '... and is told who it is';
    ($status, $h) = $curl->(GET => "http://app.example.com:$http/reports");
    is $status, 301, 'http:// redirects';
    is $h->{location}, 'https://app.example.com/reports', '... to https://';
    my @db = stat '/var/lib/nginx-signin/store/data.mdb';
    is scalar(getpwuid($db[4] // 0)), 'www-data', "the store is the workers' (www-data)";
    my $log = -f "$dir/error.log" ? $read->("$dir/error.log") : '';
    unlike $log, qr/\[(alert|emerg|crit)\]/, 'error.log has no alert' or diag $log;
    $cleanup->();
    ok !-e '/usr/lib/nginx/modules/ngx_http_signin_module.so', 'dpkg --purge removes it';
    ok !-e '/var/lib/nginx-signin', '... and the store directory';
}
done_testing;
