# Argon2id runs in the thread pool, never on the event loop (a hash would stall every request). One worker, a pool
# of two threads saturated by concurrent password sign-ins: GET /auth/me stays fast meanwhile.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time sleep);
use POSIX qw(_exit);

my $GOOD = 'violet tractor hums quietly';
my $t = SigninTest->new;
$t->run(workers => 1, main => 'thread_pool default threads=2;', http => $t->password_http(q{
    signin_password_address_limit 1000000;
}));
$t->register_password('load@example.com', $GOOD);
my $bearer = $t->register_password('me@example.com', $GOOD);
my %auth = (authorization => "Bearer $bearer");

sub pct { my ($p, @v) = @_; my @s = sort { $a <=> $b } @v; return $s[int($p * $#s)] }
sub me_times {
    my ($n) = @_;
    my @v;
    for (1 .. $n) {
        my $t0 = time;
        my $r = $t->req(GET => '/auth/me', headers => \%auth);
        die "me: $r->{status}" unless $r->{status} == 200;
        push @v, time - $t0;
        sleep 0.005;
    }
    return @v;
}
my @idle = me_times(30);

# 6 clients signing in with the password as fast as they can: more than the 2 pool threads. Each
# appends the latency of every sign-in to its file at once; they run until the /me samples are
# taken and enough sign-ins are done (the file "stop"), 20 s at most.
my $dir = $t->prefix;
my @kids;
for my $k (1 .. 6) {
    my $pid = fork // die;
    if (!$pid) {
        my $end = time + 20;
        while (time < $end && !-e "$dir/stop") {
            my $t0 = time;
            my $r = $t->password_req(token => 'load@example.com', $GOOD);
            SigninTest::append_line("$dir/load.$k", time - $t0) if $r->{status} == 200;
        }
        _exit(0);
    }
    push @kids, $pid;
}
sub signins {
    my @lat;
    for my $k (1 .. 6) {
        push @lat, grep { length } SigninTest::read_lines("$dir/load.$k");    # (read while written)
    }
    return @lat;
}
# the load runs once sign-ins come back; the pool stays full while the six clients keep asking
my $t_load = time;
$t->wait_for(sub { signins() >= 2 }, timeout => 10);
my @busy = me_times(40);
$t->wait_for(sub { signins() >= 16 }, timeout => 20);
open my $stop, '>', "$dir/stop" or die;
close $stop;
my $load_s = time - $t_load;
waitpid $_, 0 for @kids;
my @pw = signins();
diag sprintf "GET /me idle: p50 %.1f ms p90 %.1f ms; under password load: p50 %.1f ms p90 %.1f ms",
    map { 1000 * $_ } pct(0.5, @idle), pct(0.9, @idle), pct(0.5, @busy), pct(0.9, @busy);
diag sprintf "password sign-ins: %d in %.1f s, p50 %.1f ms", scalar(@pw), $load_s, 1000 * pct(0.5, @pw);
ok @pw >= 8, 'the password load ran (' . scalar(@pw) . ' sign-ins)';
# were Argon2id on the event loop, /me would queue behind sign-ins and take about as long
ok pct(0.5, @busy) < 0.25 * pct(0.5, @pw), 'GET /me p50 under load is a small fraction of a password sign-in';
ok pct(0.5, @busy) < 0.1, 'GET /me p50 under load stays under 100 ms';
$t->done;
done_testing;
