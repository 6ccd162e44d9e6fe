# A full throttle zone never evicts a counter that still refuses (issue #19 item 9): flooding the
# zone with fresh clients does not free a victim's live password backoff, and when the zone is
# full of counters that still refuse, a request that needs a new counter is refused (429)
# instead of going uncounted.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $GOOD = 'violet tractor hums quietly';
my $t = SigninTest->new;
$t->run(workers => 1, http => $t->password_http(q{
    signin_limits zone=tiny:32k;
    signin_limit_signed_in 1r/m;
    signin_password_attempts 1;
    signin_password_hash t=1 m=64k;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
}));
sub from { return ('x-forwarded-for' => $_[0]) }
$t->register_password('victim@example.com', $GOOD);

# the attacker's client earns a backoff on the victim's address
my %seen;
for (1 .. 3) { $seen{ $t->password_req(token => 'victim@example.com', 'wrong guess number one', from('10.1.1.1'))->{status} }++ }
ok $seen{429}, 'the pair (victim, attacker) is in backoff';

# then floods the zone with fresh clients to evict it
for my $i (1 .. 1200) {
    my $ip = sprintf '10.%d.%d.%d', 20 + int($i / 65536), int($i / 256) % 256, $i % 256;
    $t->req(GET => '/auth/me', headers => { from($ip) });
}
like $t->error_log, qr/the zone is full; the least recently used counters are evicted/, 'the flood filled the zone';
is $t->password_req(token => 'victim@example.com', $GOOD, from('10.1.1.1'))->{status}, 429,
    'the backoff survived the flood: even the right password waits';
is $t->password_req(token => 'victim@example.com', $GOOD, from('10.1.1.2'))->{status}, 200,
    'another client is not held back';

# every counter refusing: a client with no counter yet is refused, not let through uncounted
my ($refused_at, $i) = (0, 0);
while (!$refused_at && $i < 800) {
    $i++;
    my $ip = sprintf '10.%d.%d.%d', 40 + int($i / 65536), int($i / 256) % 256, $i % 256;
    my $first = $t->req(GET => '/auth/me', headers => { from($ip) })->{status};
    if ($first == 429) { $refused_at = $i; last }
    $t->req(GET => '/auth/me', headers => { from($ip) });  # the second in the minute: refused, held
}
ok $refused_at, "with the zone full of refusing counters, a new client's first request is refused ($refused_at clients)";
like $t->error_log, qr/the zone is full of counters that still refuse/, '... and the log says why';

$t->done;
done_testing;
