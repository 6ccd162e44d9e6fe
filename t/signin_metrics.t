# signin_metrics (issue #22): the Prometheus text format, summed over workers, kept
# across reload; the counters move with the requests made; Debian's promtool accepts the output.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(workers => 2, http => $t->signin_http(
    extra => q{signin_limits zone=signin:1m; signin_limit_sensitive 12r/m; signin_passwords on; signin_mfa on;},
    locations => q{
        location = /signin-metrics { signin_metrics; allow 127.0.0.1; deny all; }
        location /app/ { signin_require on; proxy_pass http://127.0.0.1:%%PORT%%/_ok/; }
        location /staff/ { signin_require on; signin_allow role staff; proxy_pass http://127.0.0.1:%%PORT%%/_ok/; }
        location /strong/ { signin_require mfa; proxy_pass http://127.0.0.1:%%PORT%%/_ok/; }
        location /_ok/ { return 200 "ok\n"; }
    }));

# the metrics as {name{labels} => value}
sub scrape {
    my $r = $t->req(GET => '/signin-metrics');
    die "metrics answered $r->{status}" unless $r->{status} == 200;
    my %m;
    for (split /\n/, $r->{content}) {
        next if /^#/ || !/\S/;
        my ($k, $v) = /^(\S+) (\S+)$/ or die "not a sample line: $_";
        $m{$k} = $v;
    }
    return (\%m, $r);
}

my ($m0, $r) = scrape();
is $r->{headers}{'content-type'}, 'text/plain; version=0.0.4; charset=utf-8', 'the text exposition format 0.0.4';
like $r->{content}, qr/^# TYPE signin_signins_total counter$/m, 'TYPE lines';
like $r->{content}, qr/^# HELP signin_commit_seconds /m, 'HELP lines';
for my $name (qw(signin_signins_total{method="email"} signin_signin_failures_total{reason="invalid_token"}
                 signin_tokens_issued_total{purpose="sign_in"} signin_tokens_issued_total{purpose="mfa_locked"}
                 signin_rate_limited_total{limit="sensitive"} signin_write_batches_total
                 signin_write_batch_size_count signin_commit_seconds_count signin_thread_queue_depth
                 signin_store_used_bytes signin_store_map_bytes signin_session_read_batch_size_count),
                 map { my $t = $_; map { qq(signin_deliveries_total{transport="$t",result="$_"}) } qw(sent retried failed) } qw(http smtp)) {
    ok exists $m0->{$name}, "has $name";
}
if ($ENV{SIGNIN_TEST_PG}) {  # PostgreSQL has no map: its size is PostgreSQL's to report
    is $m0->{signin_store_map_bytes}, 0, 'store map bytes: none for PostgreSQL';
    is $m0->{signin_store_used_bytes}, 0, '... nor bytes used';
} else {
    ok $m0->{signin_store_map_bytes} >= 1024 * 1024 * 1024, 'store map bytes: the map size (1g)';
    ok $m0->{signin_store_used_bytes} > 0 && $m0->{signin_store_used_bytes} < $m0->{signin_store_map_bytes}, '... and the bytes used';
}

# the counters move with the requests: sign-ins, failures, tokens, deliveries, batches
$t->sign_in('one@example.com');
$t->sign_in('two@example.com');
$t->req(POST => '/auth/session', json => { token => 'A' x 43 }, headers => { origin => $t->origin });  # invalid_token
$t->req(GET => '/app/');  # unauthenticated at the gate
my ($m1) = scrape();
is $m1->{'signin_signins_total{method="email"}'} - $m0->{'signin_signins_total{method="email"}'}, 2,
    'two email sign-ins counted (over both workers)';
is $m1->{'signin_tokens_issued_total{purpose="registration"}'} - $m0->{'signin_tokens_issued_total{purpose="registration"}'}, 2,
    'two Registration emails counted';
ok $m1->{'signin_deliveries_total{transport="http",result="sent"}'} - $m0->{'signin_deliveries_total{transport="http",result="sent"}'} >= 1,
    'deliveries counted';
is $m1->{'signin_signin_failures_total{reason="invalid_token"}'} - $m0->{'signin_signin_failures_total{reason="invalid_token"}'}, 1,
    'a failed exchange counted by its code';
ok $m1->{'signin_signin_failures_total{reason="unauthenticated"}'} > $m0->{'signin_signin_failures_total{reason="unauthenticated"}'},
    "the gate's 401 counted";

# every refusal counts, however it is answered: the gate's 403s for the access rules and for a
# missing second factor, and a wrong Origin at the gate and at the API
{
    my $c = $t->sign_in('three@example.com');
    my ($before) = scrape();
    my @asked = (
        [forbidden => $t->req(GET => '/staff/', headers => { cookie => $c })],
        [mfa_required => $t->req(GET => '/strong/', headers => { cookie => $c })],
        [origin_mismatch => $t->req(POST => '/app/x', body => 'a=1', headers => { cookie => $c, origin => 'http://evil.example' })],
        [origin_mismatch => $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $c, origin => 'http://evil.example' })],
    );
    is_deeply [map { $_->[1]{status} } @asked], [403, 403, 403, 403], 'four refusals (403)';
    my ($after) = scrape();
    for my $reason (qw(forbidden mfa_required origin_mismatch)) {
        my $k = qq{signin_signin_failures_total{reason="$reason"}};
        is(($after->{$k} // 0) - ($before->{$k} // 0), scalar(grep { $_->[0] eq $reason } @asked), "the refusals counted as $reason");
    }
}
ok $m1->{signin_write_batches_total} > $m0->{signin_write_batches_total}, 'write batches counted';
is $m1->{signin_write_batch_size_count}, $m1->{signin_write_batches_total}, '... the batch size histogram has one per batch';
is $m1->{'signin_commit_seconds_bucket{le="+Inf"}'}, $m1->{signin_commit_seconds_count}, '... the commit histogram is cumulative to +Inf';
# bucket bounds in the fewest digits that read back as the same number, as Prometheus' clients
# print them (a label is compared as text: 0.0025 and 0.0025000000000000001 are two series)
my @le = map { /_bucket\{le="([^"]+)"\}/ ? $1 : () } grep { /^signin_commit_seconds_bucket/ } keys %$m1;
is_deeply [sort { $a <=> $b } grep { $_ ne '+Inf' } @le],
    [qw(0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5)],
    '... its le labels: 0.0005, 0.001, 0.0025, ... 2.5, in their shortest form' or diag join ' ', sort @le;
ok $m1->{signin_commit_seconds_sum} > 0, '... and its sum is in seconds';

# a password sign-in, and 429s by limit
$t->register_password('pw@example.com', 'a long enough password');
my $before = $m1->{'signin_signins_total{method="password"}'};
$t->password_req(session => 'pw@example.com', 'a long enough password', origin => $t->origin);
my $limited = 0;
for (1 .. 20) { $limited++ if $t->req(POST => '/auth/login', json => { email => 'x@example.com' })->{status} == 429 }
my ($m2) = scrape();
is $m2->{'signin_signins_total{method="password"}'} - $before, 1, 'a password sign-in counted as password';
ok $limited > 0, 'the sensitive limit answered 429';
is $m2->{'signin_rate_limited_total{limit="sensitive"}'} - $m1->{'signin_rate_limited_total{limit="sensitive"}'}, $limited,
    '... each 429 counted under its limit';

# kept across reload
$t->reload;
my ($m3) = scrape();
ok $m3->{'signin_signins_total{method="email"}'} >= $m2->{'signin_signins_total{method="email"}'}, 'kept across reload';

# only where the operator puts it
is $t->req(GET => '/auth/signin-metrics')->{status}, 404, 'not below the API';

SKIP: {
    my $promtool = SigninTest::which('promtool') or skip "no promtool (build.sh installs Debian's prometheus)", 2;
    my (undef, $raw) = scrape();
    my $file = $t->prefix . '/metrics.txt';
    open my $fh, '>', $file or die; print $fh $raw->{content}; close $fh;
    my $out = `$promtool check metrics < $file 2>&1`;
    is $? >> 8, 0, 'promtool check metrics passes' or diag $out;
    unlike $out, qr/error/i, '... with no complaint' or diag $out;
}
$t->done;
done_testing;
