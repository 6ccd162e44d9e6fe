# Nothing acknowledged is lost. Workers are killed with SIGKILL while clients
# register and sign in; afterwards the LMDB file is valid (mdb_stat, a restart) and every session
# whose 200 answer reached a client still works.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(sleep time);
use POSIX ();

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => 'signin_token_resend 0;'));

# Clients: each registers its own address, reads its token, exchanges it, and appends the
# cookie of every 200 answer to a file. They run while workers are being killed.
my $acks = $t->prefix . '/acknowledged';
my @kids;
for my $k (1 .. 4) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $end = time + 3;
        my $n = 0;
        while (time < $end) {
            $n++;
            my $email = "c$k-$n\@example.com";
            my $r = $t->req(POST => '/auth/register', json => { email => $email });
            next unless ($r->{status} // 0) == 202;
            my $m = eval { $t->last_email($email, timeout => 1) };  # sent 2-22 ms after the answer
            next unless $m;
            $r = $t->req(POST => '/auth/session', json => { token => $m->{token} },
                         headers => { origin => $t->origin });
            next unless ($r->{status} // 0) == 200;
            SigninTest::append_line($acks, SigninTest::set_cookie_pair($r));
        }
        POSIX::_exit(0);
    }
    push @kids, $pid;
}

# a kill every 0.15 to 0.35 s for 3 s (the clients' time): about a dozen
my $killed = 0;
my $end = time + 3;
while (time < $end) {
    sleep 0.15 + rand(0.2);
    my @w = $t->worker_pids;
    next unless @w;
    kill 'KILL', $w[int rand @w];
    $killed++;
}
waitpid $_, 0 for @kids;
$t->wait_workers(2);
ok $killed >= 5, "killed $killed workers during the writes";

-e $acks or die "no acknowledged sessions: $acks\n";
my @cookies = SigninTest::read_lines($acks);
ok @cookies >= 10, scalar(@cookies) . ' sessions were acknowledged while workers died';

my $lost = 0;
for my $c (@cookies) {
    my $r = $t->req(GET => '/auth/me', headers => { cookie => $c });
    $lost++ unless $r->{status} == 200;
}
is $lost, 0, 'every acknowledged session still works after the crashes';

# restart nginx on the same store: the file opens and the sessions are still there
$t->stop;
SKIP: {
    skip 'mdb_stat is not installed (lmdb-utils)', 1 unless SigninTest::which('mdb_stat');
    my $stat = `mdb_stat -a ${\ $t->store} 2>&1`;
    is $? >> 8, 0, 'mdb_stat reads the store after the crashes' or diag $stat;
}
$t->run(%{ $t->{conf_opts} });
my $r = $t->req(GET => '/auth/me', headers => { cookie => $cookies[-1] });
is $r->{status}, 200, 'a session survives the restart too';

# the log has the kills (signal 9) but nothing else alarming: check it by hand, not with done()
$t->stop;
my @bad = grep { /\[(alert|emerg)\]/ && !/exited on signal 9/ } split /\n/, $t->error_log;
ok !@bad, 'no alert or emerg in error.log besides the killed workers' or diag join "\n", @bad[0 .. 5];
# the harness's check too (crit, sanitizer reports, other signals), the kills excused
$t->done(allow => qr/\[alert\].* worker process \d+ exited on signal 9$/);
done_testing;
