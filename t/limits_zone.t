# A full zone evicts the least recently used counters and keeps answering: the smallest zone,
# many distinct clients, no alert or crit in error.log (one warning), and limits still apply.
# `signin_limits off` turns every limit off; without `signin_limits` none applies and nginx -t warns.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    signin_limits zone=tiny:32k;
    signin_limit_signed_in 3r/m;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
});

my %status;
for my $i (1 .. 1200) {
    my $ip = sprintf '10.%d.%d.%d', 2 + int($i / 65536), int($i / 256) % 256, $i % 256;
    my $r = $t->req(GET => '/auth/me', headers => { 'X-Forwarded-For' => $ip });
    $status{ $r->{status} }++;
}
is_deeply \%status, { 401 => 1200 }, '1200 distinct clients in a 32k zone are all answered (401: no session)';
like $t->error_log, qr/\[warn\].*signin_limits: the zone is full; the least recently used counters are evicted/,
    'one warning says the zone is full';
my @warns = $t->error_log =~ /the zone is full/g;
cmp_ok scalar(@warns), '<=', 2, 'once per worker, not once per request';
unlike $t->error_log, qr/ngx_slab_alloc\(\) failed/, 'no slab allocation failure logged';

# the limits still work for a hot client after all that eviction
is $t->req(GET => '/auth/me', headers => { 'X-Forwarded-For' => '10.9.9.9' })->{status}, 401, "hot client request $_"
    for 1 .. 3;
is $t->req(GET => '/auth/me', headers => { 'X-Forwarded-For' => '10.9.9.9' })->{status}, 429, 'and its 4th is refused';

$t->done;

# ---------------------------------------------------------------- signin_limits off
my $u = SigninTest->new;
$u->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    signin_limits off;
    signin_limit_signed_in 3r/m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
});
my @s = map { $u->req(GET => '/auth/me')->{status} } 1 .. 10;
is_deeply [grep { $_ != 401 } @s], [], 'signin_limits off: no limit applies';
$u->done;

# ---------------------------------------------------------------- no signin_limits: off, with a warning
my $v = SigninTest->new;
my %plain = (http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    signin_limit_signed_in 3r/m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
});
my ($rc, $out) = $v->nginx_t(%plain);
is $rc, 0, 'without signin_limits the configuration is valid';
like $out, qr/\[warn\].*without "signin_limits": no request limit applies/, 'but nginx -t warns that no limit applies';
$v->run(%plain);
@s = map { $v->req(GET => '/auth/me')->{status} } 1 .. 10;
is_deeply [grep { $_ != 401 } @s], [], 'and none does';
$v->done;
done_testing;
