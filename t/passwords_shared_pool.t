# With one thread pool for Argon2id and the durable writes (no signin_password_thread_pool: the
# default layout), a password flood must not starve email sign-ins (issue #19 item 4): each worker
# runs one hash at a time, so a write batch waits for at most one hash instead of the whole queue.
# A queue that is full answers 503 with Retry-After.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time);
use POSIX qw(_exit);

my $GOOD = 'violet tractor hums quietly';
my $t = SigninTest->new;
$t->run(workers => 1, main => 'thread_pool default threads=2;', http => $t->password_http(q{
    signin_client $http_x_client;
    signin_password_address_limit 1000000;
    signin_token_resend 0;
}));
$t->register_password('flood@example.com', $GOOD);

# one hash alone, for scale
my $t0 = time;
is $t->password_req(token => 'flood@example.com', $GOOD, 'x-client' => 'solo')->{status}, 200, 'a password sign-in';
my $one = time - $t0;

# 24 clients keep 24 password sign-ins waiting at every moment
my $dir = $t->prefix;
my @kids;
for my $k (1 .. 24) {
    my $pid = fork // die;
    if (!$pid) {
        my %n;
        for (1 .. 2) { $n{ $t->password_req(token => 'flood@example.com', $GOOD, 'x-client' => "k$k")->{status} }++ }
        open my $fh, '>', "$dir/kid$k" or _exit(1);
        print $fh join(' ', map { "$_=$n{$_}" } sort keys %n), "\n";
        close $fh;
        _exit(0);
    }
    push @kids, $pid;
}
Time::HiRes::sleep(0.3);  # let the queue fill
my @lat;
my %status;
for my $i (1 .. 10) {
    my $s = time;
    $status{ $t->req(POST => '/auth/login', json => { email => 'flood@example.com' }, headers => { 'x-client' => "e$i" })->{status} }++;
    push @lat, time - $s;
}
waitpid $_, 0 for @kids;
my %pw;
for my $k (1 .. 24) {
    open my $fh, '<', "$dir/kid$k" or next;
    my $line = <$fh>;
    $pw{$1} += $2 while $line =~ /(\d+)=(\d+)/g;
}
@lat = sort { $a <=> $b } @lat;
my $median = $lat[$#lat / 2];
diag sprintf 'one hash %.0f ms; /login during the flood: median %.0f ms, max %.0f ms; password sign-ins: %s',
    1000 * $one, 1000 * $median, 1000 * $lat[-1], join(', ', map { "$_ x$pw{$_}" } sort keys %pw);
is_deeply [keys %status], [202], 'every email sign-in request during the flood answered 202';
ok $pw{200} && $pw{200} == 48, 'the password sign-ins all went through as well' or diag explain \%pw;
# a batch waits for the one running hash (and the machine's other work), not for the 24 queued:
# without the one-hash-per-worker rule the slowest /login here took 160-220 ms (5-8 hashes)
cmp_ok $lat[-1], '<', 3 * $one, '/login never waits for more than a few hashes, whatever the queue';

$t->done;
done_testing;
