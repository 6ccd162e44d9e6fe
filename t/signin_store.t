# The LMDB store seen from outside: no token or session secret in the
# store's files or logs, a full map answers JSON 507 storage_full while earlier sessions keep
# working, and the full store still opens after a reload and after a restart.
use strict; use warnings;
use Test::More;
use Time::HiRes qw(time);
use HTTP::Tiny;
use MIME::Base64 qw(decode_base64);
use JSON::PP;
use POSIX ();
use lib 't/lib'; use SigninTest;

my $conf = q{
    signin_store %%STORE%% size=1m;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
        location = /metrics { signin_metrics; }
    }
};
# mdb_dump (lmdb-utils, optional) reads the store as another LMDB reader would
my $NO_MDB_DUMP = SigninTest::which('mdb_dump') ? '' : 'mdb_dump is not installed (lmdb-utils)';
my $t = SigninTest->new;
# a short client timeout: a hung worker must fail the test quickly, not after 30 s per request
$t->{http} = HTTP::Tiny->new(timeout => 5, max_redirect => 0, keep_alive => 0);
$t->run(http => $conf);
my $O = $t->origin;

sub slurp { my ($f) = @_; open my $fh, '<:raw', $f or return ''; local $/; my $d = <$fh>; return $d // '' }
sub raw_bytes { my ($s) = @_; (my $b = $s) =~ tr{-_}{+/}; return decode_base64($b . '=' x ((4 - length($b) % 4) % 4)) }

# a cookie session, a bearer session, a spent token and a token still waiting
my $alice = 'alice@example.com';
my $spent = $t->request_token($alice);
my $r = $t->req(POST => '/auth/session', json => { token => $spent }, headers => { origin => $O });
is $r->{status}, 200, 'cookie session';
my $cookie = SigninTest::set_cookie_pair($r);
my ($cookie_secret) = $cookie =~ /=(.*)$/;
my $bt = $t->request_token('bob@example.com');
$r = $t->req(POST => '/auth/token', json => { token => $bt });
is $r->{status}, 200, 'bearer session';
my $bearer = $r->{json}{access_token};
my $waiting = $t->request_token('carol@example.com');
my %secret = (cookie => $cookie_secret, bearer => $bearer, 'spent token' => $spent, 'bearer token' => $bt, 'waiting token' => $waiting);

{
    my $data = slurp($t->store . '/data.mdb');
    ok length($data) > 0, 'data.mdb is readable (' . length($data) . ' bytes)';
    ok index($data, $alice) >= 0, 'data.mdb holds the address (so the search below looks at the right bytes)';
    my ($dump, $pdump);
    SKIP: {
        skip $NO_MDB_DUMP, 1 if $NO_MDB_DUMP;
        $dump = `mdb_dump -a @{[ $t->store ]} 2>&1`;
        is $? >> 8, 0, 'mdb_dump -a reads the store' or diag $dump;
        $pdump = `mdb_dump -a -p @{[ $t->store ]} 2>&1`;
    }
    for my $what (sort keys %secret) {
        my $s = $secret{$what};
        ok index($data, $s) < 0, "data.mdb does not hold the $what text";
        ok index($data, raw_bytes($s)) < 0, "data.mdb does not hold the $what bytes";
        SKIP: {
            skip $NO_MDB_DUMP, 2 if $NO_MDB_DUMP;
            ok index($pdump, $s) < 0, "mdb_dump -p does not show the $what";
            ok index($dump, unpack('H*', raw_bytes($s))) < 0, "mdb_dump does not show the $what bytes in hex";
        }
        for my $log (qw(error.log access.log)) {
            ok index(slurp($t->prefix . "/$log"), $s) < 0, "$log does not hold the $what";
        }
    }
    my $lock = slurp($t->store . '/lock.mdb');
    ok !(grep { index($lock, $_) >= 0 } values %secret), 'lock.mdb holds no secret';
}

# Write batches first run every job in the batch's one LMDB transaction, and run again with a
# nested transaction per job only when a job abandoned a write (issue #20): the sign-ins above
# (a registration, two exchanges, reads) never do. The full map below does.
sub replays {
    my $m = $t->req(GET => '/metrics');
    return $m->{content} =~ /^signin_write_batch_replays_total (\d+)$/m ? $1 : undef;
}
is replays(), 0, 'no write batch ran twice before the map filled';

# fill the 1 MB map with registrations until the store says it is full. Eight clients at once:
# each worker's writes then share group commits, so the map fills in a fraction of the time one
# client takes. Each client stops at its first answer that is not 202 and keeps it.
my $full;
my $t0 = time;
my $sent = 0;
my $dir = $t->prefix;
my @fillers;
for my $k (1 .. 8) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $n = 0;
        while (time - $t0 <= 12 && !-e "$dir/full") {
            my $res = $t->req(POST => '/auth/register', json => { email => "filler-$k-" . ++$n . "-padding-padding\@example.com" });
            next if $res->{status} == 202;
            open my $fh, '>', "$dir/refused.$k" or POSIX::_exit(1);
            print $fh JSON::PP->new->encode({ status => $res->{status}, headers => $res->{headers}, content => $res->{content} });
            close $fh;
            open my $flag, '>', "$dir/full" or POSIX::_exit(1);
            close $flag;
            last;
        }
        open my $fh, '>', "$dir/sent.$k" or POSIX::_exit(1);
        print $fh $n;
        close $fh;
        POSIX::_exit(0);    # never the parent's destructors (they would stop nginx)
    }
    push @fillers, $pid;
}
waitpid $_, 0 for @fillers;
my @refused;
for my $k (1 .. 8) {
    $sent += slurp("$dir/sent.$k") || 0;
    my $j = slurp("$dir/refused.$k");
    push @refused, JSON::PP->new->decode($j) if length $j;
}
$full = $refused[0];
is_deeply [map { $_->{status} } @refused], [(507) x @refused], 'every client that was refused got 507'
    if @refused;
ok $full, "the store filled up after $sent registrations (" . sprintf('%.1f', time - $t0) . 's)';
$full //= { status => 0, headers => {}, content => '' };
is $full->{status}, 507, 'a full store answers 507' or diag "$full->{status}: $full->{content}";
like $full->{headers}{'content-type'} // '', qr{^application/json}, 'as JSON';
my $fj = eval { JSON::PP->new->decode($full->{content}) } || {};
is $fj->{code}, 'storage_full', 'code storage_full';
ok length($fj->{error} // ''), 'with a message';
cmp_ok replays() // 0, '>=', 1, 'the batch that met the full map ran again, a nested transaction per job';
like $full->{headers}{'cache-control'} // '', qr/no-store/, 'and cache-control: no-store';
for my $i (1 .. 5) {
    $r = $t->req(POST => '/auth/register', json => { email => "one-more-$i\@example.com" });
    ok $r->{status} == 507 || $r->{status} == 202, "a later write on the nearly full store answers 507 or 202 (got $r->{status})" or diag $r->{content};
}

# what was made before still works
$r = $t->req(GET => '/auth/me', headers => { cookie => $cookie });
is $r->{status}, 200, 'a cookie session made before the store filled still works' or diag $r->{content};
is $r->{json}{email}, $alice, 'as alice';
$r = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $bearer" });
is $r->{status}, 200, 'a bearer session made before the store filled still works' or diag $r->{content};
$r = $t->req(GET => '/auth/sessions', headers => { cookie => $cookie });
is $r->{status}, 200, '/sessions still answers';
$r = $t->req(POST => '/auth/session', json => { token => $waiting }, headers => { origin => $O });
ok $r->{status} == 200 || $r->{status} == 507, "exchanging a waiting token on a full store answers 200 or 507 (got $r->{status})";
is(($r->{json} || {})->{code}, 'storage_full', 'a refused exchange says storage_full') if $r->{status} != 200;
$r = $t->req(GET => '/auth/nope');
is $r->{status}, 404, 'the API still routes';

SKIP: {
    skip $NO_MDB_DUMP, 1 if $NO_MDB_DUMP;
    my $dump = `mdb_dump -a @{[ $t->store ]} 2>&1 >/dev/null`;
    is $? >> 8, 0, 'the full store is a valid LMDB environment (mdb_dump reads it)' or diag $dump;
}

# reload and restart on the full store
$t->reload;
$r = $t->req(GET => '/auth/me', headers => { cookie => $cookie });
is $r->{status}, 200, 'after a reload the store opens and the session works' or diag $r->{content};
$t->stop;
$t->run(http => $conf);
$r = $t->req(GET => '/auth/me', headers => { cookie => $cookie });
is $r->{status}, 200, 'after a restart the store opens and the session works' or diag $r->{content};
$r = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $bearer" });
is $r->{status}, 200, 'and the bearer session too' or diag $r->{content};
unlike $t->error_log, qr/could not be opened/, 'the store never failed to open';
$t->done;
done_testing;
