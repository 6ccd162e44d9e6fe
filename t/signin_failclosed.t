# A storage error fails closed: when the store cannot be opened, the API and the gate answer
# 503 storage_unavailable (never a 2xx, never the protected content), and the log says why. A
# browser opening a page is shown an HTML 503 page instead of the JSON.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
mkdir $t->store;
open my $fh, '>', $t->store . '/data.mdb' or die;
print $fh "this is not an LMDB file\n" x 512;   # LMDB refuses it: MDB_INVALID
close $fh;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; signin_pages on; }
        location /page/ { signin_require on; signin_login_url /auth/; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location /app/ { signin_require on; proxy_pass http://127.0.0.1:%%PORT%%/_legacy/; }
        location /_legacy/ { return 200 "protected content"; }
    }
});

for my $case (['POST', '/auth/register', { email => 'a@example.com' }],
              ['POST', '/auth/login', { email => 'a@example.com' }],
              ['POST', '/auth/token', { token => 'A' x 43 }],
              ['GET', '/auth/me', undef]) {
    my ($m, $p, $j) = @$case;
    my $r = $t->req($m, $p, defined $j ? (json => $j) : ());
    is $r->{status}, 503, "$m $p answers 503 when the store cannot be opened";
    is $r->{json}{code}, 'storage_unavailable', '... with code storage_unavailable';
    like $r->{headers}{'cache-control'} // '', qr/no-store/, '... and no-store';
}
my $r = $t->req(GET => '/app/', headers => { cookie => 'svc_dev_session=' . ('A' x 43) });
is $r->{status}, 503, 'the gate fails closed too';
unlike $r->{content}, qr/protected content/, 'and never shows the protected content';
# a browser is shown a page, not JSON (issue #42), where the location speaks to browsers
for my $path ('/page/', '/auth/me') {
    $r = $t->req(GET => $path, headers => { accept => 'text/html,application/xhtml+xml', cookie => 'svc_dev_session=' . ('A' x 43) });
    is $r->{status}, 503, "a browser's GET $path: 503";
    like $r->{headers}{'content-type'} // '', qr{^text/html}, '... as an HTML page';
    like $r->{content}, qr{<h1[^>]*>Sign-in is unavailable</h1>}, '... that says sign-in is unavailable';
    unlike $r->{content}, qr/protected content|storage_unavailable/, '... and shows neither the content nor the code';
    like $r->{headers}{'cache-control'} // '', qr/no-store/, '... not cached';
}
$r = $t->req(GET => '/page/', headers => { accept => 'application/json', cookie => 'svc_dev_session=' . ('A' x 43) });
is $r->{json}{code}, 'storage_unavailable', 'a script asking for JSON still gets the JSON';
$t->stop;
my $store = $t->store;
like $t->error_log, qr/\[crit\].*signin_store "\Q$store\E" could not be opened: /,
    'error.log says which store could not be opened, and why';
# and nothing else alarming: the store's [crit] is this test's doing
$t->done(allow => qr/\[crit\].*signin_store ".*" could not be opened/);
done_testing;
