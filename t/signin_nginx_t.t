# nginx -t that explains (issues #22, #42): a zero lifetime is refused at its own line, and a
# signin_delivery that matches no location at its line; signin_require without any signin_api is
# warned about; a signin_thread_pool naming no thread_pool is reported at the signin_thread_pool
# line, with the line to add; and at run time a refused Origin is logged (info) with both origins.
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

# The line of nginx.conf that holds $re (1-based).
sub line_of {
    my ($re) = @_;
    open my $fh, '<', $c->prefix . '/nginx.conf' or die $!;
    my $n = 0;
    while (<$fh>) { $n++; return $n if $_ =~ $re }
    die "no line matches $re";
}

# checks made once the http block is read name the directive's own line, not the block's end
for my $d (qw(signin_token_ttl signin_session_ttl signin_session_idle signin_bearer_ttl signin_audit_keep
              signin_delivery_timeout signin_password_backoff)) {
    my ($rc, $out) = $c->nginx_t(http => "$base\n    $d 0;\n $server");
    isnt $rc, 0, "$d 0 is refused";
    my $at = line_of(qr/^\s*$d 0;/);
    like $out, qr/\[emerg\].*"$d" must be longer than 0.* in \S+nginx\.conf:$at$/m, "... saying why, at its own line $at"
        or diag $out;
}
{
    my ($rc, $out) = $c->nginx_t(http => ($base =~ s{/_signin/deliver;}{/_signin/nowhere;}r) . " $server");
    isnt $rc, 0, 'a signin_delivery that matches no location is refused';
    my $at = line_of(qr/signin_delivery \/_signin\/nowhere;/);
    like $out, qr{\[emerg\].*signin_delivery "/_signin/nowhere" matches no exact or prefix location.* in \S+nginx\.conf:$at$}m,
        "... at the line of signin_delivery ($at)" or diag $out;
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
like $out, qr/add "thread_pool nosuchpool threads=4;" to the main context.* in \S+nginx\.conf:$line$/m,
    '... and the line to add' or diag $out;
# a thread_pool may follow the http block: nginx accepts it, the warning only says where it helps
{
    my $file = $c->prefix . '/late.conf';
    open my $fh, '>', $file or die $!;
    print $fh $c->conf_text(http => "$base\n    signin_thread_pool late;\n $server"), "thread_pool late threads=2;\n";
    close $fh;
    $out = `$c->{nginx} -p @{[$c->prefix]} -c $file -t 2>&1`;
    is $? >> 8, 0, 'a thread_pool after the http block still passes' or diag $out;
}
($rc, $out) = $c->nginx_t(main => "thread_pool default threads=4;\nthread_pool early threads=2;",
    http => "$base\n    signin_thread_pool early;\n $server");
is $rc, 0, 'a thread_pool above signin_thread_pool passes';
unlike $out, qr/add "thread_pool/, '... with no advice';

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
# A database's connections (nginx -t asks it for max_connections): every node's workers together
# above what it allows is a warning with the sum, at the signin_store line; the default is quiet;
# a database nginx -t cannot reach is noted, not an error; connections= on a directory is refused.
if ($ENV{SIGNIN_TEST_PG}) {
    my $db = "signin_store %%STORE%% connections=50 nodes=4;\n    signin_secret_key %%PREFIX%%/signin.key;\n";
    my $rest = "    signin_origin http://127.0.0.1:%%PORT%%;\n    signin_delivery /_signin/deliver;\n";
    my ($rc, $out) = $c->nginx_t(workers => 3, http => "    $db$rest $server");
    is $rc, 0, 'connections beyond the database\'s max_connections: nginx -t still passes';
    my $at = line_of(qr/signin_store .* connections=50 nodes=4;/);
    like $out, qr/\[warn\].*signin_store: 4 nodes x 3 worker processes x \(connections=50 \+ 1 for the session reads\) = 612 connections, but the database lets ordinary clients hold \d+ .* in \S+nginx\.conf:$at$/m,
        '... with a warning that does the sum, at the signin_store line' or diag $out;
    ($rc, $out) = $c->nginx_t(http => $base . " $server");
    is $rc, 0, 'the default connections';
    unlike $out, qr/max_connections/, '... fit a test database: nothing said' or diag $out;
} else {
    my $http = "    signin_store postgresql://127.0.0.1:1/none?connect_timeout=2 connections=4;\n"
        . "    signin_secret_key %%PREFIX%%/signin.key;\n    signin_origin http://127.0.0.1:%%PORT%%;\n"
        . "    signin_delivery /_signin/deliver;\n $server";
    my ($rc, $out) = $c->nginx_t(http => $http);
    is $rc, 0, 'a database nginx -t cannot reach is no error';
    like $out, qr/\[notice\].*signin_store: the database's max_connections could not be read, so the connections were not checked/,
        '... it is noted' or diag $out;
    unlike $out, qr/\[(?:warn|emerg)\][^\n]*(?:signin_store|max_connections)/, '... and nothing worse' or diag $out;
    like $out, qr/could not be read[^\n]*Connection refused[^\n]* in \S+nginx\.conf:\d+$/m, '... on one line' or diag $out;
    ($rc, $out) = $c->nginx_t(http => $base =~ s{%%STORE%%;}{%%STORE%% connections=4;}r . " $server");
    isnt $rc, 0, 'connections= on a store in a directory is refused';
    like $out, qr/invalid parameter "connections=4"/, '... naming it' or diag $out;
    ($rc, $out) = $c->nginx_t(http => $http =~ s{connections=4}{connections=0}r);
    isnt $rc, 0, 'connections=0 is refused';
    like $out, qr/invalid "connections=0" \(a number from 1 to 10000\)/, '... saying what it takes' or diag $out;
}

done_testing;
