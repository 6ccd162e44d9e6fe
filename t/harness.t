# The harness itself (t/lib/SigninTest.pm), where a race or a bail-out of its own would make
# other files flaky or stop the whole run (issue #42):
#  - a reader of a file the harness shares between processes (the mailer's) never sees a line
#    the writer has not finished: a last line without its newline is left for the next read;
#  - the mailer writes each delivery as one whole line, also a large one, while a test polls it;
#  - lines appended by many processes at once come out whole, none lost;
#  - nginx that does not start is one failing test and the end of that file, not a BAIL_OUT;
#  - a port one test process holds is not given to another (prove -j), and a stale claim is taken.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Time::HiRes qw(time);
use POSIX ();
use lib 't/lib'; use SigninTest;

my $dir = tempdir('signin_harness.XXXXXX', TMPDIR => 1, CLEANUP => 1);

# ---------------------------------------------------------------- a line still being written
{
    my $file = "$dir/half.log";
    open my $fh, '>', $file or die;
    print $fh qq({"email":"a\@example.com","token":"t1"}\n{"email":"b\@exam);
    close $fh;
    is_deeply [SigninTest::read_lines($file)], [q({"email":"a@example.com","token":"t1"})],
        'read_lines: a last line without its newline is not returned';
    my $mailer = bless { file => $file }, 'SigninTest::Mailer';    # (no server: only its file)
    my @m = eval { $mailer->emails };
    is $@, '', 'Mailer::emails does not die on a line the mailer is still writing' or diag $@;
    is_deeply [map { $_->{email} } @m], ['a@example.com'], '... and returns the whole lines';
    open $fh, '>>', $file or die;
    print $fh qq(ple.com","token":"t2"}\n);
    close $fh;
    is_deeply [map { $_->{email} } $mailer->emails], ['a@example.com', 'b@example.com'],
        '... the line is read once it is whole';
    is_deeply [SigninTest::read_lines("$dir/none")], [], 'read_lines: no file, no lines';
}

# ---------------------------------------------------------------- the mailer under a polling reader
# Large deliveries (a buffered print writes 8 KB at a time), read as fast as possible while they
# are written: every read decodes, and each delivery arrives whole.
{
    my $port = SigninTest::free_port();
    my $mailer = SigninTest::Mailer->new(port => $port);
    my $n = 10;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        for my $i (1 .. $n) {
            my $body = $SigninTest::JSON->encode({ email => "big$i\@example.com", pad => 'x' x 100_000 });
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10) or POSIX::_exit(1);
            print $s "POST /send HTTP/1.1\r\nHost: x\r\nContent-Length: " . length($body) . "\r\n\r\n$body";
            local $/;
            my $resp = <$s>;
            POSIX::_exit(2) unless ($resp // '') =~ m{^HTTP/1\.1 204};
        }
        POSIX::_exit(0);
    }
    my ($reads, $error, @got) = (0, '');
    my $deadline = time + 60;
    while (time < $deadline) {
        @got = eval { $mailer->emails };
        if ($@) { $error = $@; last }
        $reads++;
        last if @got >= $n;
    }
    waitpid $pid, 0;
    is $? >> 8, 0, "$n deliveries of 100 KB each were answered";
    is $error, '', "$reads reads while the mailer wrote: each one decoded" or diag $error;
    is scalar(@got), $n, 'every delivery is in the file';
    is scalar(grep { length($_->{pad} // '') == 100_000 } @got), scalar(@got), '... each one whole';
    $mailer->stop;
}

# ---------------------------------------------------------------- many writers at once
{
    my $file = "$dir/many.log";
    my @kids;
    for my $k (1 .. 8) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            SigninTest::append_line($file, "$k-$_ " . ('y' x 20_000)) for 1 .. 50;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid $_, 0 for @kids;
    my @lines = SigninTest::read_lines($file);
    is scalar(@lines), 400, 'append_line: 8 processes x 50 lines, none lost';
    is scalar(grep { /^\d-\d+ y{20000}\z/ } @lines), 400, '... none torn or interleaved';
}

# ---------------------------------------------------------------- nginx that does not start
# A child perl runs a file whose nginx.conf nginx refuses, then one more test: its TAP output
# must show one failure naming the step, no "Bail out!", and nothing after it.
{
    my $script = "$dir/refused.t";
    open my $fh, '>', $script or die;
    print $fh <<'END';
use strict; use warnings;
use Test::More;
use SigninTest;
my $t = SigninTest->new;
$t->run(http => 'this_is_not_a_directive;');
ok 1, 'reached after a failed start';
done_testing;
END
    close $fh;
    (my $lib = $INC{'SigninTest.pm'}) =~ s{/SigninTest\.pm\z}{};    # the harness this file loaded
    my $out = `$^X -I'$lib' '$script' 2>&1`;
    my $rc = $? >> 8;
    isnt $rc, 0, 'a file whose nginx does not start fails';
    unlike $out, qr/^Bail out!/m, '... without bailing out of the whole run' or diag $out;
    like $out, qr/^not ok 1 - nginx starts$/m, '... with one failing test for the start' or diag $out;
    unlike $out, qr/reached after a failed start/, '... and nothing after it runs' or diag $out;
    like $out, qr/unknown directive "this_is_not_a_directive"/, '... saying what nginx said' or diag $out;
    like $out, qr/^1\.\.1$/m, '... with a plan, so the file ends as a failure rather than a crash' or diag $out;
}

# ---------------------------------------------------------------- ports claimed across processes
{
    my $p = SigninTest::free_port();
    my $claims = ($ENV{TMPDIR} || '/tmp') . '/ngx_signin_t.ports';
    ok -f "$claims/$p", 'free_port claims its port in the shared directory';
    # another live process's claim: a child that waits, claiming a port it found free
    pipe my $r, my $w or die;
    my $child = fork // die;
    if (!$child) {
        close $r;
        my $q = SigninTest::free_port();
        print $w "$q\n";
        close $w;
        sleep 30;
        POSIX::_exit(0);
    }
    close $w;
    chomp(my $q = <$r> // '');
    like $q, qr/^\d+$/, 'a second process got a port';
    isnt $q, $p, '... not the first one\'s';
    ok !SigninTest::claim_port($q), 'a port a live process claimed is not claimed again';
    kill 'KILL', $child;
    waitpid $child, 0;
    ok SigninTest::claim_port($q), 'once that process is gone, its claim is stale and taken over';
    unlink "$claims/$q";
}

done_testing;
