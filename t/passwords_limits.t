# The password attempt limits over HTTP, with the windows shortened by directive: 5 free per
# (address, client) then a doubling wait (429 + Retry-After), per-address attempts per window from
# any client, the repeated-registration backoff, success clearing the pair only, a reset clearing
# the address. Two workers: the counters live in the signin_limits zone, shared by both.
# The waits are msec values, but Retry-After counts whole seconds (rounded up): 1 s doubling to
# 2 s is the shortest backoff whose doubling the header still shows. Each wait is measured from
# the answer that announced it.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time);

my $GOOD  = 'violet tractor hums quietly';
my $WRONG = 'seven orange kettles whistle';
my $t = SigninTest->new;
# The limits are the subject here, not the hash: a cheap Argon2id (the module allows it for tests,
# with a warning) keeps the ~90 wrong-password attempts from taking seconds of CPU.
$t->run(workers => 2, main => 'thread_pool default threads=2;', http => $t->password_http(q{
    signin_password_hash t=1 m=64k;
    signin_limits zone=signin:1m;
    signin_limit_sensitive 100000r/m;
    signin_limit_address 1000r/h;
    signin_client $http_x_client;
    signin_password_backoff 1s;
    signin_password_backoff_max 2s;
    signin_password_address_limit 40;
    signin_password_address_window 1h;
    signin_password_register_backoff 1s;
    signin_password_register_backoff_max 2s;
}));
my $O = { origin => $t->origin };
sub try_pw {
    my ($email, $password, $client) = @_;
    return $t->password_req(token => $email, $password, 'x-client' => $client);
}

$t->register_password('a@example.com', $GOOD);

# ---------------------------------------------------------------- (address, client)
for my $i (1 .. 5) {
    is try_pw('a@example.com', $WRONG, 'c1')->{status}, 401, "free attempt $i: 401";
}
my $r = try_pw('a@example.com', $GOOD, 'c1');
my $at = time;
is $r->{status}, 429, 'the 6th attempt from the same client waits, even with the right password';
is $r->{headers}{'retry-after'}, 1, "... Retry-After: 1 (signin_password_backoff 1s)";
is $r->{json}{code}, 'rate_limited', '... rate_limited';
is $r->{json}{retry_after}, $r->{headers}{'retry-after'}, '... retry_after in the body';
is try_pw('a@example.com', $GOOD, 'c2')->{status}, 200, 'another client is not held back';
$t->sleep_until($at + 1 + 0.05);
is try_pw('a@example.com', $WRONG, 'c1')->{status}, 401, 'after the wait, one more attempt';
$r = try_pw('a@example.com', $WRONG, 'c1');
$at = time;
is $r->{status}, 429, '... then a longer wait';
is $r->{headers}{'retry-after'}, 2, "... doubled to 2 s ($r->{headers}{'retry-after'})";
$t->sleep_until($at + 2 + 0.05);
is try_pw('a@example.com', $WRONG, 'c1')->{status}, 401, 'after the doubled wait, one more attempt';
my $capped = try_pw('a@example.com', $WRONG, 'c1')->{headers}{'retry-after'};
is $capped, 2, "... capped at signin_password_backoff_max ($capped)";
# c3 and c4 build up histories, then c3 succeeds: its history is cleared, c4's is not
is try_pw('a@example.com', $WRONG, 'c3')->{status}, 401 for 1 .. 4;
is try_pw('a@example.com', $WRONG, 'c4')->{status}, 401 for 1 .. 4;
is try_pw('a@example.com', $GOOD, 'c3')->{status}, 200, 'a success';
is try_pw('a@example.com', $WRONG, 'c3')->{status}, 401, "... clears that pair's history" for 1 .. 5;
is try_pw('a@example.com', $GOOD, 'c3')->{status}, 429, '... (5 fresh free attempts, then the wait)';
is try_pw('a@example.com', $WRONG, 'c4')->{status}, 401, "c4's fifth failure";
is try_pw('a@example.com', $GOOD, 'c4')->{status}, 429, "... then the wait: c3's success did not clear c4's history";

# ---------------------------------------------------------------- reset clears the address
my ($cookie) = $t->sign_in('a@example.com', login => 1);
$r = $t->req(POST => '/auth/password', json => { password => $GOOD }, headers => { origin => $t->origin, cookie => $cookie });
is $r->{status}, 204, 'a password reset from a fresh session';
is try_pw('a@example.com', $GOOD, 'c4')->{status}, 200, '... clears c4';
is try_pw('a@example.com', $GOOD, 'c3')->{status}, 200, '... and c3';

# ---------------------------------------------------------------- per address, any client
my $start = time;
my @st = map { try_pw('b@example.com', $WRONG, "client-$_")->{status} } 1 .. 40;
is_deeply \@st, [(401) x 40], "40 attempts from 40 clients (signin_password_address_limit 40)";
$r = try_pw('b@example.com', $WRONG, 'client-41');
is $r->{status}, 429, 'the 41st for that address waits, whatever the client';
ok $r->{headers}{'retry-after'} > 3500, '... until the window (1h here) ends';
is try_pw('c@example.com', $WRONG, 'client-41')->{status}, 401, 'another address is not affected';

# ---------------------------------------------------------------- registration backoff
is $t->password_req(register => 'new@example.com', $GOOD)->{status}, 202, 'first password registration';
$r = $t->password_req(register => 'new@example.com', $GOOD);
$at = time;
is $r->{status}, 429, 'a repeat within 1 s waits';
is $r->{headers}{'retry-after'}, 1, '... Retry-After: 1';
$t->sleep_until($at + 1 + 0.05);
is $t->password_req(register => 'new@example.com', $GOOD)->{status}, 202, 'after the wait it goes through';
my $next = $t->password_req(register => 'new@example.com', $GOOD)->{headers}{'retry-after'};
is $next, 2, "... and the next wait doubles ($next)";
is $t->password_req(register => 'other@example.com', $GOOD)->{status}, 202, 'per address';

my ($rc, $out) = $t->admin('audit', 500);
my $failed = () = $out =~ /"kind":"login.failed","email":"a\@example.com"/g;
ok $failed >= 10, "failures on a real account audited as login.failed ($failed)";

$t->done;
done_testing;
