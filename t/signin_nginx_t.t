# nginx -t that explains (issue #22): a zero lifetime is refused; signin_require without any
# signin_api is warned about; a signin_thread_pool naming no thread_pool is reported at the
# signin_thread_pool line; and at run time a refused Origin is logged (info) with both origins.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $c = SigninTest->new;
my $base = <<'EOF2';
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
EOF2
my $server = 'server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } location = /_signin/deliver { internal; return 204; } }';

for my $d (qw(signin_token_ttl signin_session_ttl signin_session_idle signin_bearer_ttl)) {
    my ($rc, $out) = $c->nginx_t(http => "$base $d 0; $server");
    isnt $rc, 0, "$d 0 is refused";
    like $out, qr/must be longer than 0/, '... saying why';
}

my ($rc, $out) = $c->nginx_t(http => "$base server { listen 127.0.0.1:%%PORT%%; location / { signin_require on; } location = /_signin/deliver { internal; return 204; } }");
is $rc, 0, 'signin_require without signin_api still loads';
like $out, qr/\[warn\].*signin_require is used but no location has "signin_api"/, '... with a warning';

($rc, $out) = $c->nginx_t(main => 'thread_pool default threads=4;', http => "$base\n    signin_thread_pool nosuchpool;\n $server");
isnt $rc, 0, 'a signin_thread_pool without its thread_pool is refused';
like $out, qr/unknown thread pool "nosuchpool" in \S+nginx\.conf:\d+/, '... naming the file and line';
my ($line) = $out =~ /unknown thread pool "nosuchpool" in \S+nginx\.conf:(\d+)/;
my @conf = do { open my $fh, '<', $c->prefix . '/nginx.conf' or die; <$fh> };
like $conf[$line - 1] // '', qr/signin_thread_pool nosuchpool/, '... the line of signin_thread_pool';

# a refused Origin names both origins in error.log (at info, like nginx's other client errors)
my $t = SigninTest->new;
$t->run(http => "$base signin_registration on; signin_limits off; $server");
my $body = '{"email":"a@example.com"}';
my $resp = $t->raw("POST /auth/login HTTP/1.0\r\nHost: x\r\nOrigin: https://app.example\x01forged\r\n"
    . "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n\r\n$body");
like $resp, qr{^HTTP/1\.1 403}, 'a foreign Origin: 403';
like $t->error_log, qr{\[info\].*signin: refused Origin "https://app\.example\?forged": signin_origin is "http://127\.0\.0\.1:\d+"},
    'error.log names both origins (control characters shown as ?)';
$t->done;
done_testing;
