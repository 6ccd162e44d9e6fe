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
done_testing;
