# Session reads under concurrency: many signed-in clients at once, each asking who it is through
# the API (GET /auth/me) and through signin_require, with cookies and bearer tokens of several
# accounts, a signed-out session and a forged cookie among them. Every answer must be the asker's
# own, or 401 for the ones that are nobody's.
#
# On PostgreSQL (SIGNIN_TEST_PG, the suite's second pass) the reads leave the event loop and a
# worker's waiting reads go to the database together, in one round trip
# (signin_session_read_batch_size): this checks that they did, and that batching never hands one
# client another's answer. On LMDB the reads are memory reads on the event loop; the answers are
# checked all the same.
use strict; use warnings;
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep);
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => "signin_token_resend 0;\n    signin_limits off;",
    locations => q{
        location = /metrics { signin_metrics; }
        location /app/ {
            signin_require on;
            proxy_set_header X-User "$signin_user_email";
            proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
        }
        location /_legacy/ { allow 127.0.0.1; deny all; return 200 "user=$http_x_user"; }
    }));

# 12 accounts, each with a cookie session and a bearer token
my @who;
for my $i (1 .. 12) {
    my $email = "reader$i\@example.com";
    push @who, { email => $email, headers => { cookie => scalar $t->sign_in($email) } };
    push @who, { email => $email, headers => { authorization => 'Bearer ' . $t->bearer($email) } };
}
my $gone = $t->sign_in('gone@example.com');
is $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $gone, origin => $t->origin })->{status}, 204,
    'one session signed out';
(my $forged = $who[0]{headers}{cookie}) =~ s/=(.)/'=' . ($1 eq 'A' ? 'B' : 'A')/e;
push @who, { email => undef, headers => { cookie => $gone } }, { email => undef, headers => { cookie => $forged } };

my $before = $t->req(GET => '/metrics')->{content} // '';

# On PostgreSQL the sessions table is locked for a moment while the clients start: the first reads
# wait for the database, the ones that come meanwhile wait in their worker, and go together.
my $locker;
if ($ENV{SIGNIN_TEST_PG}) {
    $locker = fork // die "fork: $!";
    if ($locker == 0) {
        exec 'psql', $t->store_url, '-qAt', '-c',
            'BEGIN; LOCK TABLE signin_sessions IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(1.5); COMMIT;';
        POSIX::_exit(127);
    }
    sleep 0.3;
}

# 16 clients, 40 requests each on a keep-alive connection, every asker in turn
my $out = $t->prefix . '/answers';
my @kids;
for my $k (0 .. 15) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $c = $t->connection;
        my @lines;
        for my $n (0 .. 39) {
            my $w = $who[($k * 7 + $n) % @who];
            my $api = $n % 2 == 0;
            my $r = $t->req(GET => $api ? '/auth/me' : '/app/page', headers => $w->{headers}, conn => $c);
            my $seen = $r->{status} != 200 ? '' : $api ? ($r->{json}{email} // '?') : (($r->{content} // '') =~ /^user=(.*)$/ ? $1 : '?');
            my $want = $w->{email};
            my $ok = defined $want ? ($r->{status} == 200 && $seen eq $want) : $r->{status} == 401;
            push @lines, ($ok ? 'ok' : 'bad') . " $r->{status} want=" . ($want // 'nobody') . " got=$seen";
        }
        SigninTest::append_line($out, join "\n", @lines);
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
waitpid $_, 0 for @kids;
waitpid $locker, 0 if $locker;
my @answers = SigninTest::read_lines($out);
is scalar(@answers), 16 * 40, 'every request was answered';
my @bad = grep { !/^ok / } @answers;
is scalar(@bad), 0, 'each answer was the asker\'s own (or 401 for nobody\'s)' or diag join "\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)];

my $after = $t->req(GET => '/metrics')->{content} // '';
my %m;
for my $when ([before => $before], [after => $after]) {
    for my $part (qw(sum count)) {
        $m{"$when->[0]_$part"} = $when->[1] =~ /^signin_session_read_batch_size_$part (\d+)$/m ? $1 : 0;
    }
}
my ($reads, $trips) = ($m{after_sum} - $m{before_sum}, $m{after_count} - $m{before_count});
SKIP: {
    skip 'LMDB reads sessions on the event loop: nothing goes to a thread', 1 unless $ENV{SIGNIN_TEST_PG};
    # 640 reads (the 401s' too); at least the 12 that waited behind the lock rode with others
    ok $reads >= 16 * 40 && $trips < $reads, "session reads went together ($reads reads in $trips round trips)";
}
is $reads, 0, 'LMDB: no session read left the event loop' unless $ENV{SIGNIN_TEST_PG};

$t->done;
done_testing;
