# Second-factor guesses are counted for the account, not for each pending sign-in: with the
# password, many pending sign-ins (five wrong codes each) would otherwise give many guesses. After
# signin_mfa_free_failures wrong codes in a row each further try waits (429, the right code
# included), the wait doubling; at signin_mfa_lock the factor locks (403 mfa_locked) until the
# person signs in by email again; the lock emails the person an MfaLocked notice. Small numbers
# here: 2 free, 1 s doubling, a lock at 5.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $oathtool = SigninTest::which('oathtool');
plan skip_all => 'no oathtool (build.sh installs Debian\'s oathtool)' unless $oathtool;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{
    signin_limits off; signin_mfa on; signin_passwords on;
    signin_mfa_free_failures 2; signin_mfa_backoff 1s; signin_mfa_lock 5;
}));
my $O = { origin => $t->origin };
sub code_at { SigninTest::totp_code(@_) }
sub settle { SigninTest::totp_settle(6) }
sub post { my ($path, $body, $cookie) = @_; $t->req(POST => "/auth/$path", json => $body, headers => { %$O, ($cookie ? (cookie => $cookie) : ()) }) }

my $alice = 'alice@example.com';
my $password = 'a long enough password for alice';
my $cookie = $t->sign_in($alice);
my $r = post('mfa/totp/setup', {}, $cookie);
my $secret = $r->{json}{secret} // '';
settle();
$r = post('mfa/totp/confirm', { code => code_at($secret) }, $cookie);
is $r->{status}, 200, 'a factor is set up';
my @recovery = @{ $r->{json}{recovery_codes} || [] };
is post('password', { password => $password }, $cookie)->{status}, 204, 'and a password';

# each wrong code from a pending sign-in of its own, as an attacker who knows the password would
sub pending { my $p = post('password/session', { email => $alice, password => $password }); return $p->{json}{mfa_token} // '' }
my $wrong = 'AAAA-AAAA-AAAA-AAAA';
# made before the timed part: a password sign-in's hash may take a while on a busy machine, and
# the waits below are counted from each wrong code
my @ready = map { pending() } 1 .. 7;
for my $i (1 .. 2) {
    $r = post('mfa/verify', { mfa_token => shift @ready, recovery_code => $wrong });
    is $r->{status}, 401, "wrong code $i, from a new pending sign-in: 401";
}
$r = post('mfa/verify', { mfa_token => shift @ready, recovery_code => $recovery[0] });
is $r->{status}, 429, 'then every try waits, the right code too';
is(($r->{json} || {})->{code}, 'rate_limited', '... rate_limited');
is $r->{headers}{'retry-after'}, 1, '... Retry-After: the first wait (1 s)';
sleep 1;
is post('mfa/verify', { mfa_token => shift @ready, recovery_code => $wrong })->{status}, 401, 'after the wait: one more wrong code';
$r = post('mfa/verify', { mfa_token => shift @ready, recovery_code => $wrong });
is $r->{status}, 429, '... and the wait doubled';
is $r->{headers}{'retry-after'}, 2, '... Retry-After: 2';
sleep 2;
is post('mfa/verify', { mfa_token => shift @ready, recovery_code => $wrong })->{status}, 401, 'wrong code 4';
sleep 4;
$r = post('mfa/verify', { mfa_token => shift @ready, recovery_code => $wrong });
is $r->{status}, 403, 'wrong code 5 locks the factor';
is(($r->{json} || {})->{code}, 'mfa_locked', '... mfa_locked');
like $r->{json}{error} // '', qr/sign in by email/, '... and says how to open it again';
# the owner is told, by an email the lock wrote to the outbox (sent at once, else by the sweep)
my $told = $t->last_email($alice, purpose => 'MfaLocked', timeout => 10);
ok $told, '... and emails alice an MfaLocked notice';
is(($told || {})->{tag}, 'auth.mfa_locked', '... tagged auth.mfa_locked');
is(($told || {})->{token} // '', '', '... with no token');
like(($told || {})->{text} // '', qr/email code/, '... saying how to get back in');
sleep 8;
$r = post('mfa/verify', { mfa_token => pending(), recovery_code => $recovery[0] });
is $r->{status}, 403, 'locked: the right code is refused too, however long one waits';
is scalar(grep { $_->{purpose} eq 'MfaLocked' } $t->emails_to($alice)), 1, '... and tells alice only once';

# an email sign-in opens it again
my $email_step = post('session', { token => $t->request_token($alice) });
is $email_step->{status}, 202, 'an email sign-in: the second step';
$r = post('mfa/verify', { mfa_token => $email_step->{json}{mfa_token}, recovery_code => $recovery[0] });
is $r->{status}, 200, '... which the right code now passes' or diag $r->{content};

my ($code, $audit) = $t->admin('audit', '--email', $alice);
like $audit, qr/mfa\.account_locked/, 'the lock is audited';
like $audit, qr/mfa\.unlocked/, 'and its opening';
$t->done;
done_testing;
