# signin_password_thread_pool: Argon2id jobs run in the named pool, everything else (batched
# store writes) in signin_thread_pool. Proof by overflow: the hashing pool has one thread and a
# queue of one, so concurrent password sign-ins overflow it (and only it) while email sign-in
# requests made at the same time all succeed. An undeclared pool fails nginx -t.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use Time::HiRes qw(time);
use POSIX qw(_exit);

my $GOOD = 'violet tractor hums quietly';
my $t = SigninTest->new;

my ($rc, $out) = $t->nginx_t(main => 'thread_pool default threads=2;', http => $t->password_http(q{
    signin_password_thread_pool hashing;
}));
isnt $rc, 0, 'nginx -t refuses a signin_password_thread_pool that no thread_pool declares';
like $out, qr/unknown thread pool "hashing"/, 'and names it';

$t->run(workers => 1, main => "thread_pool default threads=4;\nthread_pool hashing threads=1 max_queue=1;",
    http => $t->password_http(q{
    signin_password_thread_pool hashing;
    signin_password_address_limit 1000000;
    signin_token_resend 0;
}));
my $bearer = $t->register_password('pool@example.com', $GOOD);
ok $bearer, 'a password registration and its exchange work through the hashing pool';
my $r = $t->password_req(token => 'pool@example.com', $GOOD);
is $r->{status}, 200, 'a password sign-in alone succeeds' or diag $r->{content};

# 8 clients signing in with the password at once, several rounds
my $dir = $t->prefix;
my @kids;
for my $k (1 .. 8) {
    my $pid = fork // die;
    if (!$pid) {
        my %n;
        for (1 .. 3) {
            my $r = $t->password_req(token => 'pool@example.com', $GOOD);
            $n{ $r->{status} }++;
            # a full queue: 503 busy with Retry-After (issue #19 item 4)
            $n{busy}++ if $r->{status} == 503 && ($r->{json}{code} // '') eq 'busy' && ($r->{headers}{'retry-after'} // '') eq '1';
        }
        open my $fh, '>', "$dir/kid$k" or _exit(1);
        print $fh join(' ', map { "$_=$n{$_}" } sort keys %n), "\n";
        close $fh;
        _exit(0);
    }
    push @kids, $pid;
}
# email sign-in requests while the hashing pool is overflowing
my (%email, $n);
my $end = time + 1.5;
while (time < $end) {
    $email{ $t->req(POST => '/auth/login', json => { email => 'pool@example.com' })->{status} }++;
    $n++;
}
waitpid $_, 0 for @kids;
my %pw;
for my $k (1 .. 8) {
    open my $fh, '<', "$dir/kid$k" or next;
    my $line = <$fh>;
    $pw{$1} += $2 while $line =~ /(\w+)=(\d+)/g;
}
diag 'password sign-ins: ' . join(', ', map { "$_ x$pw{$_}" } sort keys %pw);
ok $pw{200}, 'some concurrent password sign-ins succeed';
ok((grep { /^\d+$/ && $_ != 200 } keys %pw), 'and some are refused: the one-slot hashing pool overflowed');
like $t->error_log, qr/thread pool "hashing" queue overflow/, 'nginx logs the overflow of the hashing pool';
is $pw{busy} // 0, $pw{503} // 0, 'every refusal is 503 busy with Retry-After: 1';
my $said = () = $t->error_log =~ /the thread pool is full/g;
cmp_ok $said, '>=', 1, 'the module says the pool is full';
cmp_ok $said, '<=', 4, '... at most once a second, not once a refusal';
unlike $t->error_log, qr/thread pool "default" queue overflow/, 'the default pool never overflowed';
is_deeply [keys %email], [202], "all $n email sign-in requests made meanwhile answered 202 (writes do not use the hashing pool)"
    or diag explain \%email;
$r = $t->req(GET => '/auth/me', headers => { authorization => "Bearer $bearer" });
is $r->{status}, 200, 'the bearer session still works';
$t->done;
done_testing;
