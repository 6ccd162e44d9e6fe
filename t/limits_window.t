# Windows reopen (shortened by directive), counters survive `nginx -s reload`, and the rate
# syntax is checked by `nginx -t`.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time);

my $t = SigninTest->new;
my %conf = (http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    signin_limits zone=signin:1m;
    signin_limit_sensitive 3r/1s;
    signin_limit_signed_in 5r/m;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-Pid $pid always;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
});
$t->run(%conf);

sub login { $t->req(POST => '/auth/login', json => { email => 'nobody@example.com' }, headers => { 'X-Forwarded-For' => $_[0] }) }
sub me { $t->req(GET => '/auth/me', headers => { 'X-Forwarded-For' => $_[0] }) }

# ---------------------------------------------------------------- windows reopen
# 1 s is the shortest window the rate syntax takes (checked below); the estimate of the sliding
# window lets a 4th request in 4/3 of a window after the first, so Retry-After is at most 2.
is login('10.0.1.1')->{status}, 202, "request $_ of 3 in 1 s" for 1 .. 3;
my $r = login('10.0.1.1');
my $refused_at = time;
is $r->{status}, 429, 'the 4th within 1 s is refused';
my $wait = $r->{headers}{'retry-after'};
cmp_ok $wait, '>=', 1, 'Retry-After >= 1';
cmp_ok $wait, '<=', 2, 'Retry-After <= 2 for a 1 s window';
$t->sleep_until($refused_at + $wait);
is login('10.0.1.1')->{status}, 202, 'after Retry-After seconds the window has reopened';

# ---------------------------------------------------------------- reload keeps the counters
is me('10.0.1.2')->{status}, 401, "signed-in request $_ of 5 (401: no session)" for 1 .. 5;
is me('10.0.1.2')->{status}, 429, 'the 6th within the minute is refused';
my @before = $t->worker_pids;
$t->reload;
my @after = $t->worker_pids;
my %old = map { $_ => 1 } @before;
ok !(grep { $old{$_} } @after), 'the workers were replaced by the reload';
$r = me('10.0.1.2');
is $r->{status}, 429, 'after reload the client is still over its limit';
cmp_ok $r->{headers}{'retry-after'}, '>=', 30, 'and its window did not restart';
is me('10.0.1.3')->{status}, 401, 'another client is served after reload';

# ---------------------------------------------------------------- configuration errors
my ($rc, $out) = $t->nginx_t(http => q{ signin_limit_sensitive 30/m; });
isnt $rc, 0, 'a rate without r/ fails nginx -t';
like $out, qr/invalid rate "30\/m"/, 'with the value in the message';
($rc, $out) = $t->nginx_t(http => q{ signin_limit_sensitive 3r/10ms; });
like $out, qr/the window must be 1s to 30d/, 'a window under a second is refused';
($rc, $out) = $t->nginx_t(http => q{ signin_limits zone=z:4k; });
like $out, qr/zone "z" is too small/, 'a zone under 8 pages is refused';
($rc, $out) = $t->nginx_t(http => q{ signin_limits zone=z; });
like $out, qr/invalid zone/, 'a zone without a size is refused';
($rc, $out) = $t->nginx_t(http => q{ signin_limits off; signin_limit_signed_in off; signin_limit_address 2r/3h; });
is $rc, 0, 'off and r/TIME are accepted' or diag $out;
$t->write_conf(%conf);  # leave the running configuration in place for done()

$t->done;
done_testing;
