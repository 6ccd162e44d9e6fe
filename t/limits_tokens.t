# Token guessing is bounded (failed exchanges per client, then 429 even for a valid token) and
# token sends are limited per address, not per asker: over the limit the answer
# is the same 202 and nothing is sent.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits zone=signin:1m;
    signin_token_resend 0;
    signin_limit_exchange_failures 5r/10m;
    signin_limit_address 2r/h;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});

sub from { my ($ip, %h) = @_; return (headers => { 'X-Forwarded-For' => $ip, %h }) }
my @chars = ('A' .. 'Z', 'a' .. 'z', 0 .. 9, '-', '_');
sub guess { join '', map { $chars[rand @chars] } 1 .. 43 }

# ---------------------------------------------------------------- guessing is bounded
my $token = $t->request_token('guess@example.com');
for my $i (1 .. 5) {
    my $ep = $i % 2 ? '/auth/token' : '/auth/session';
    my $r = $t->req(POST => $ep, json => { token => guess() }, from('10.0.2.1', origin => $t->origin));
    is $r->{status}, 401, "guess $i is answered 401 invalid_token";
}
my $r = $t->req(POST => '/auth/token', json => { token => $token }, from('10.0.2.1'));
is $r->{status}, 429, 'after 5 failed exchanges even a valid token gets 429';
is $r->{json}{code}, 'rate_limited', 'rate_limited';
cmp_ok $r->{headers}{'retry-after'}, '>', 60, 'Retry-After in the 10-minute window';
$r = $t->req(POST => '/auth/session', json => { token => $token }, from('10.0.2.1', origin => $t->origin));
is $r->{status}, 429, '/session is refused too';
$r = $t->req(POST => '/auth/token', json => { token => $token }, from('10.0.2.2'));
is $r->{status}, 200, 'the token was not touched: another client exchanges it';
$r = $t->req(POST => '/auth/login', json => { email => 'guess@example.com' }, from('10.0.2.1'));
is $r->{status}, 202, 'the guessing client may still ask for a token (a different limit)';

# ---------------------------------------------------------------- sends per address
my $addr = 'popular@example.com';
for my $i (1 .. 2) {
    my $r = $t->req(POST => '/auth/register', json => { email => $addr }, from("10.0.3.$i"));
    is $r->{status}, 202, "send $i of 2 answered 202";
    ok $t->last_email($addr, count => $i), "and delivered";
}
for my $i (3 .. 5) {
    my $r = $t->req(POST => '/auth/register', json => { email => uc $addr }, from("10.0.3.$i"), finished => 1);
    is $r->{status}, 202, "request $i (another client, same address) still answers 202";
    is_deeply $r->{json}, { status => 'sent' }, 'with the same body';
}
$t->assert_nothing_sent($addr, count => 2, name => 'but nothing more was sent to the address');
$r = $t->req(POST => '/auth/register', json => { email => 'other@example.com' }, from('10.0.3.3'));
is $r->{status}, 202, 'another address from the same client';
ok $t->last_email('other@example.com'), 'is delivered';

# the limit belongs to the mailbox: another group (tenant) is the same inbox (issue #19 item 6)
my $inbox = 'tenants@example.com';
for my $g (0 .. 5) {
    my $r = $t->req(POST => '/auth/register', json => { email => $inbox, group => "g$g" }, from("10.0.5.$g"),
                    finished => 1);
    is $r->{status}, 202, "register in group g$g: 202";
}
ok $t->last_email($inbox, count => 2), 'six groups, one inbox: two emails arrive';
$t->assert_nothing_sent($inbox, count => 2, name => 'and only two, as the address limit says');

# requests that send nothing do not use up the address's sends
for my $i (1 .. 4) {
    is $t->req(POST => '/auth/login', json => { email => 'ghost@example.com' }, from('10.0.4.1'))->{status}, 202,
        "login for an unknown address $i: 202";
}
$r = $t->req(POST => '/auth/register', json => { email => 'ghost@example.com' }, from('10.0.4.1'));
ok $t->last_email('ghost@example.com'), 'the address can still be sent a registration token';

my $audit = '';
$t->wait_for(sub { (undef, $audit) = $t->admin('audit', 200); $audit =~ /exchange_failures/ }, timeout => 3);
ok((grep { /"throttled"/ && /popular\@example\.com/ && /address:register/ } split /\n/, $audit),
   'the audit trail records the throttled sends to the address') or diag $audit;
ok((grep { /"throttled"/ && /10\.0\.2\.1/ && /exchange_failures/ } split /\n/, $audit),
   'and the refused exchanges');
unlike $audit, qr/\Q$token\E/, 'never the token';

$t->done;
done_testing;
