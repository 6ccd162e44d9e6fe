# Over HTTP, a wrong password, an unknown address, an account without a password
# and a suspended account give the same 401 after the same work (a real Argon2id verify); their
# median times are compared (no answer tells which it was); a successful sign-in upgrades a weaker hash.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time);

my $GOOD  = 'violet tractor hums quietly';
my $WRONG = 'seven orange kettles whistle';
my $t = SigninTest->new;
my $http = $t->password_http(q{
    signin_client $http_x_client;
    signin_password_address_limit 100000;
});
$t->run(main => 'thread_pool default threads=2;', http => $http);

$t->register_password('real@example.com', $GOOD);
$t->register_password('suspended@example.com', $GOOD);
$t->admin('suspend', 'suspended@example.com');
$t->sign_in('emailonly@example.com');

my %cases = (
    wrong_password => ['real@example.com', $WRONG],
    unknown        => ['unknown@example.com', $GOOD],
    no_password    => ['emailonly@example.com', $GOOD],
    suspended      => ['suspended@example.com', $GOOD],
);
my (%times, %bodies);
for my $round (1 .. 11) {
    for my $name (sort keys %cases) {
        my ($email, $pw) = @{ $cases{$name} };
        my $t0 = time;
        my $r = $t->password_req(token => $email, $pw, 'x-client' => "c-$round-$name");
        push @{ $times{$name} }, time - $t0;
        $bodies{ $r->{status} . ' ' . $r->{content} }++;
    }
}
is scalar(keys %bodies), 1, 'all four causes give one and the same answer';
like((keys %bodies)[0], qr/^401 .*invalid_credentials/, '... a 401 invalid_credentials');
sub median { my @s = sort { $a <=> $b } @_; return $s[$#s / 2] }
my %med = map { $_ => median(@{ $times{$_} }) } keys %times;
diag sprintf "median %s: %.1f ms", $_, 1000 * $med{$_} for sort keys %med;
for my $a (sort keys %med) {
    for my $b (sort keys %med) {
        next if $a ge $b;
        my $ratio = $med{$a} / $med{$b};
        ok $ratio > 0.5 && $ratio < 2, sprintf "%s vs %s: %.2fx (within 0.5x-2x)", $a, $b, $ratio;
    }
}
ok $med{unknown} > 0.005, sprintf 'an unknown address costs a real Argon2id verify (%.1f ms)', 1000 * $med{unknown};
$t->done;

# ---------------------------------------------------------------- rehash of a weaker hash
my $w = SigninTest->new;
my $weak = $w->password_http("signin_password_hash t=1 m=8m;");
$w->run(http => $weak);
$w->register_password('old@example.com', $GOOD);
like $w->password_hash('old@example.com'), qr/^\$argon2id\$v=19\$m=8192,t=1,p=1\$/, 'a hash made with weaker settings';
$w->reload(http => $w->password_http(''));
is $w->password_req(token => 'old@example.com', $WRONG)->{status}, 401, 'a failed sign-in ...';
like $w->password_hash('old@example.com'), qr/m=8192,t=1/, '... leaves it';
is $w->password_req(token => 'old@example.com', $GOOD)->{status}, 200, 'a successful sign-in ...';
my $phc = $w->password_hash('old@example.com');
like $phc, qr/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, '... upgrades it to 19 MiB, 2 iterations';
is $w->password_req(token => 'old@example.com', $GOOD)->{status}, 200, 'the upgraded hash verifies';
is $w->password_hash('old@example.com'), $phc, '... and is not rehashed again';
$w->done;
done_testing;
