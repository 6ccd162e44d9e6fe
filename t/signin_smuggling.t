# An answer given before the request body is read must discard that body: otherwise its bytes
# are parsed as the next request on the keep-alive connection (request smuggling past a proxy).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /smuggled { return 200 "SMUGGLED"; }
    }
});

my $inner = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
my $big = $inner . ('x' x 5000);
my @cases = (
    ['wrong content type (415)', 'POST', '/auth/login', 'text/plain', $inner, qr/^HTTP\/1\.1 415/],
    ['unknown endpoint (404)', 'POST', '/auth/nothing', 'application/json', $inner, qr/^HTTP\/1\.1 404/],
    ['wrong method (405)', 'POST', '/auth/me', 'application/json', $inner, qr/^HTTP\/1\.1 405/],
    ['body over signin_body_max (413)', 'POST', '/auth/login', 'application/json', $big, qr/^HTTP\/1\.1 413/],
    ['wrong origin (403)', 'POST', '/auth/login', 'application/json', $inner, qr/^HTTP\/1\.1 403/, 'Origin: https://evil.example'],
);
for my $c (@cases) {
    my ($what, $method, $path, $type, $body, $status, $extra) = @$c;
    my $req = "$method $path HTTP/1.1\r\nHost: x\r\nContent-Type: $type\r\nContent-Length: "
        . length($body) . "\r\n" . ($extra ? "$extra\r\n" : '') . "\r\n" . $body;
    # a second, honest request follows on the same connection, then the connection closes
    my $resp = $t->raw($req . "GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    like $resp, $status, "$what answers";
    my $n = () = $resp =~ /SMUGGLED/g;
    is $n, 1, "$what: the body is not run as a request (only the honest follow-up is)";
}
$t->done;
done_testing;
