# A graceful stop (SIGQUIT) or a reload (SIGHUP) with jobs in flight answers every request that
# nginx had read: a worker keeps running until its thread tasks are done (each carries a timer,
# as nginx's own thread offloads do since 1.25.4), instead of exiting with requests blocked on a
# task and logging "open socket ... left in connection".
#
# Password registrations make the jobs slow on purpose: each is an Argon2id hash (19 MiB) in a
# one-thread pool, so 40 of them keep each worker busy for a while after the signal.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(sleep time);

my $N = 40;

# Sends $N password registrations on their own connections (each a different client, so the
# per-client limits stay out of the way) and returns the sockets once every request is written.
sub send_all {
    my ($t, $round) = @_;
    my @socks;
    for my $i (1 .. $N) {
        my $body = qq({"email":"r$round-$i\@example.com","password":"violet tractor hums quietly $i"});
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port, Timeout => 5)
            or die "connect: $!";
        print $s "POST /auth/password/register HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            . "X-Client: c$round-$i\r\nContent-Type: application/json\r\n"
            . "Content-Length: " . length($body) . "\r\n\r\n$body";
        push @socks, $s;
    }
    return @socks;
}

# Reads every socket to its end (bounded); returns the status line of each ('' when none came).
sub read_all {
    my (@socks) = @_;
    my %buf = map { ("$_" => '') } @socks;
    my $sel = IO::Select->new(@socks);
    my $end = time + 60;
    while ($sel->count && time < $end) {
        for my $s ($sel->can_read(0.5)) {
            my $n = sysread($s, my $chunk, 4096);
            if ($n) { $buf{"$s"} .= $chunk; next }
            $sel->remove($s);
            close $s;
        }
    }
    return map { ($buf{"$_"} =~ m{^(HTTP/1\.\d \d+)}) ? $1 : '' } @socks;
}

sub passwords_http {
    my ($t) = @_;
    return $t->password_http(q{
        signin_client $http_x_client;
        signin_password_thread_pool hash;
    });
}

for my $signal (qw(QUIT HUP)) {
    my $t = SigninTest->new;
    $t->run(main => "thread_pool default threads=2;\nthread_pool hash threads=1;", http => passwords_http($t));
    my @socks = send_all($t, $signal);
    sleep 0.1;  # nginx reads them at once; their hashes take far longer than this
    my $before = () = grep { /Registration/ } map { $_->{purpose} } $t->mailbox;
    ok $before < $N, "jobs are still running when SIG$signal arrives ($before of $N done)";
    kill $signal, $t->master_pid;
    my @status = read_all(@socks);
    my $answered = grep { $_ eq 'HTTP/1.1 202' } @status;
    is $answered, $N, "SIG$signal: every request nginx had read is answered 202"
        or diag join ', ', map { $_ || 'no answer' } @status;
    if ($signal eq 'HUP') {
        # the new workers serve, and every registration of the old ones was delivered
        $t->wait_workers(2);
        my $r = $t->req(GET => '/auth/me');
        is $r->{status}, 401, 'the reloaded workers answer';
        my $got = 0;
        for (1 .. 100) {
            $got = () = grep { $_->{email} =~ /^rhup-/ } $t->mailbox;
            last if $got == $N;
            sleep 0.05;
        }
        is $got, $N, 'every registration answered during the reload was delivered';
    }
    $t->stop;
    unlike $t->error_log, qr/open socket|left in connection|aborting/, "SIG$signal: no connection left behind";
    $t->done;
}

done_testing;
