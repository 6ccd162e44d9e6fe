# Nobody can fill the store: what requests that nobody signed in to write (here an audit entry for
# each sign-in request to an unknown address) is bounded, the oldest entries going first, so a
# flood never takes the room that sign-ins need. A 1 MB LMDB map held about 4 500 such entries
# before the bound: this flood sends 6 000, then an existing account signs in.
use strict; use warnings;
use Test::More;
use Time::HiRes qw(time);
use POSIX ();
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%% size=1m;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});
my $O = $t->origin;
my ($cookie) = $t->sign_in('alice@example.com');

my $dir = $t->prefix;
my ($clients, $each) = (4, 1500);
my $t0 = time;
my @pids;
for my $k (1 .. $clients) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my %status;
        my $conn = $t->connection;
        for my $n (1 .. $each) {
            last if time - $t0 > 120;    # bounded, however slow the machine
            my $email = ('x' x 40) . "-$k-$n\@" . join('.', 'd' x 60, 'e' x 60, 'f' x 60, 'example');    # ~250 bytes
            my $r = $t->req(POST => '/auth/login', conn => $conn, json => { email => $email });
            if ($r->{status} == 599) { $conn = $t->connection; $r = $t->req(POST => '/auth/login', json => { email => $email }) }
            $status{ $r->{status} }++;
        }
        open my $fh, '>', "$dir/flood.$k" or POSIX::_exit(1);
        print $fh join(' ', map { "$_=$status{$_}" } sort keys %status), "\n";
        close $fh;
        POSIX::_exit(0);    # never the parent's destructors (they would stop nginx)
    }
    push @pids, $pid;
}
waitpid $_, 0 for @pids;
my %all;
for my $k (1 .. $clients) {
    open my $fh, '<', "$dir/flood.$k" or next;
    my $line = <$fh> // '';
    $all{$1} += $2 while $line =~ /(\d+)=(\d+)/g;
}
my $sent = 0;
$sent += $_ for values %all;
diag sprintf 'the flood: %s in %.1f s', join(', ', map { "$all{$_} x $_" } sort keys %all), time - $t0;
cmp_ok $sent, '>=', 5000, 'the flood sent at least 5 000 requests' or diag 'the machine was too slow to fill the store';
is $all{507} // 0, 0, 'no request of the flood found the store full';
is_deeply [sort keys %all], [202], 'every one answered 202';

# the store still has the room that sign-ins need
my $r = $t->req(GET => '/auth/me', headers => { cookie => $cookie });
is $r->{status}, 200, 'a session made before the flood still works';
my $token = eval { $t->request_token('alice@example.com', login => 1) };
ok $token, 'an existing account asks for a token after the flood' or diag $@;
$r = $t->req(POST => '/auth/session', json => { token => $token // '' }, headers => { origin => $O });
is $r->{status}, 200, 'and signs in' or diag "$r->{status} $r->{content}";
my $new = eval { $t->request_token('bob@example.com') };
ok $new, 'a new address registers' or diag $@;

# the audit trail kept the newest entries: the flood's last ones and alice's sign-in
my (undef, $audit) = $t->admin('audit', '--email', 'alice@example.com');
like $audit, qr/session\.created/, "alice's newest sign-in is in the audit trail" or diag $audit;
my (undef, $stats) = $t->admin('stats');
my ($count) = $stats =~ /"audit\w*"\s*:\s*(\d+)/;
ok defined $count && $count <= 256, 'the audit trail holds at most 1 MB / 4 KiB = 256 entries (' . ($count // 'none') . ')'
    or diag $stats;

$t->done;
done_testing;
