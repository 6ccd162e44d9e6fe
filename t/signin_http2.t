# HTTP/2 over TLS behaves like HTTP/1.1 (issue #23): the main flow — a code by email, its exchange
# with the Origin, /me, the gate, logout — driven by curl --http2 against a TLS server with a
# self-signed certificate; the session cookie is __Host- on an https origin.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $curl = SigninTest::which('curl') or plan skip_all => 'no curl';
my $openssl = SigninTest::which('openssl') or plan skip_all => 'no openssl';
plan skip_all => 'curl without HTTP/2' unless `$curl --version` =~ /\bHTTP2\b/;
my $nginx = $ENV{NGINX_BIN} || '/usr/sbin/nginx';
my $built = `$nginx -V 2>&1`;
plan skip_all => "this nginx has no TLS or HTTP/2 (NGINX_SRC builds it without): $nginx"
    unless $built =~ /--with-http_ssl_module/ && $built =~ /--with-http_v2_module/;

my $t = SigninTest->new;
my $prefix = $t->prefix;
my $cert_cmd = "$openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost "
    . "-addext subjectAltName=DNS:localhost -keyout $prefix/key.pem -out $prefix/cert.pem";
my $cert_out = `$cert_cmd 2>&1`;
SigninTest::give_up('openssl makes a certificate', $cert_out) if $?;
my $http = $t->signin_http(
    extra => q{signin_limits off;},
    locations => q{
        location /app/ { signin_require on; proxy_set_header X-User $signin_user_email; proxy_pass http://127.0.0.1:%%PORT2%%; }
    },
    servers => q{ server { listen 127.0.0.1:%%PORT2%%; location / { return 200 "app for $http_x_user\n"; } } });
$http =~ s{signin_origin http://127\.0\.0\.1:%%PORT%%;}{signin_origin https://localhost:%%PORT%%;};
$http =~ s{listen 127\.0\.0\.1:%%PORT%%;}{listen 127.0.0.1:%%PORT%% ssl http2; ssl_certificate %%PREFIX%%/cert.pem; ssl_certificate_key %%PREFIX%%/key.pem;};
$t->run(http => $http, wait_ports => [$t->port, $t->port2]);
my $base = 'https://localhost:' . $t->port;
my $jar = "$prefix/cookies.txt";

# curl --http2 with the cookie jar: (status, protocol, body)
sub h2 {
    my ($method, $path, $body, @headers) = @_;
    my @args = ('-sk', '--http2', '--resolve', 'localhost:' . $t->port . ':127.0.0.1', '-b', $jar, '-c', $jar,
                '-X', $method, '-o', "$prefix/body", '-w', '%{http_code} %{http_version}');
    push @args, '-H', $_ for @headers;
    push @args, '-H', 'content-type: application/json', '--data-binary', $body if defined $body;
    my $out = `$curl @{[ map { quotemeta } @args ]} '$base$path' 2>&1`;
    my ($code, $version) = $out =~ /^(\d+) (\S+)$/ or return (0, '', $out);
    my $text = do { local $/; open my $fh, '<', "$prefix/body" or die; <$fh> };
    return ($code, $version, $text);
}

my ($code, $version, $body) = h2(POST => '/auth/register', '{"email":"h2@example.com"}');
is $code, 202, 'POST /register over HTTP/2: 202';
is $version, '2', '... the answer is HTTP/2';
my $mail = {};
for (1 .. 50) {  # the email arrives a few milliseconds after the answer
    my (undef, undef, $box) = h2(GET => '/_dev/mailbox', undef, 'Accept: application/json');
    ($mail) = grep { $_->{email} eq 'h2@example.com' } @{ (eval { $SigninTest::JSON->decode($box) } || {})->{emails} || [] };
    last if $mail;
    select undef, undef, undef, 0.05;
}
$mail //= {};
ok $mail->{code}, 'the code reached the mailbox';
($code) = h2(POST => '/auth/session', qq({"email":"h2\@example.com","code":"$mail->{code}"}));
is $code, 403, 'the exchange without Origin: 403, as over HTTP/1.1';
($code, $version, $body) = h2(POST => '/auth/session', qq({"email":"h2\@example.com","code":"$mail->{code}"}), "Origin: $base");
is $code, 200, 'the exchange with the Origin: 200';
my $cookies = do { local $/; open my $fh, '<', $jar or die; <$fh> };
like $cookies, qr/__Host-svc_session/, '... the __Host- session cookie (an https origin)';
($code, $version, $body) = h2(GET => '/auth/me');
is $code, 200, 'GET /me by the cookie over HTTP/2';
like $body, qr/h2\@example\.com/, '... names the account';
($code, $version, $body) = h2(GET => '/app/');
is $code, 200, 'the gate lets the session through over HTTP/2';
like $body, qr/app for h2\@example\.com/, '... and the upstream gets the user';
($code) = h2(POST => '/auth/logout', '{}', "Origin: $base");
is $code, 204, 'logout';
($code) = h2(GET => '/app/');
is $code, 401, 'the gate closes again';
$t->done;
done_testing;
