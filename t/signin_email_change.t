# Email change over HTTP (issue #16): the new address confirms, the old approves, in
# either order, by token or by code; the change is made by the second; the tokens never sign in
# and sign-in tokens never confirm; one half expiring ends it; a taken address is re-checked;
# then EmailChanged to the old address and every other session ends.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_token_ttl 4s; signin_token_resend 1s;}));
my $O = { origin => $t->origin };
sub post { my ($path, $body, $cookie) = @_; $t->req(POST => "/auth/$path", json => $body, headers => { %$O, ($cookie ? (cookie => $cookie) : ()) }) }

for my $order ('new first', 'old first') {
    my ($from, $to) = $order eq 'new first' ? ('a1@example.com', 'a2@example.com') : ('b1@example.com', 'b2@example.com');
    my $other = $t->sign_in($from);
    my ($cookie, $user) = $t->sign_in($from);
    is post('email/change', { email => $to })->{status}, 401, "$order: /email/change needs a session";
    my $r = post('email/change', { email => $to }, $cookie);
    is $r->{status}, 202, "$order: 202";
    is_deeply $r->{json}, { status => 'sent' }, '... {"status":"sent"}';
    my $new = $t->last_email($to, purpose => 'EmailChange');
    my $old = $t->last_email($from, purpose => 'EmailChangeApproval');
    ok $new && $old, '... an email to each address';
    like $new->{link}, qr{/auth/#confirm=\Q$new->{token}\E$}, '... each with a link to the confirmation, and a code';
    like $new->{code}, qr/^[0-9A-Z]{4}-[0-9A-Z]{4}$/, '... and a code';
    is post('session', { token => $new->{token} })->{status}, 401, '... the new address\'s token does not sign in';
    my ($first, $second) = $order eq 'new first' ? ($new, $old) : ($old, $new);
    $r = post('email/confirm', { token => $first->{token} });
    is $r->{status}, 200, "$order: the first half";
    is $r->{json}{status}, $order eq 'new first' ? 'confirmed' : 'approved', "... says $r->{json}{status}";
    is $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{json}{email}, $from, '... and nothing changed';
    $r = post('email/confirm', { email => $second->{email}, code => lc $second->{code} });
    is $r->{status}, 200, "$order: the second half (by code)";
    is_deeply $r->{json}, { status => 'changed', email => $to }, '... changed';
    is $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{json}{email}, $to, '... the account has the new address';
    is $t->req(GET => '/auth/me', headers => { cookie => $other })->{status}, 401, '... every other session ended';
    my $notice = $t->last_email($from, purpose => 'EmailChanged');
    ok $notice, '... and EmailChanged went to the old address';
    is $notice->{token}, '', '... with no token';
    my ($again, $same) = $t->sign_in($to);
    is $same->{id}, $user->{id}, 'the new address signs in to the same account';
}

# a sign-in token is refused at /email/confirm
my $c = $t->sign_in('c1@example.com');
my $tok = $t->request_token('c1@example.com', login => 1);
my $r = post('email/confirm', { token => $tok });
is $r->{status}, 401, 'a sign-in token at /email/confirm: 401';
is $r->{json}{code}, 'invalid_token', '... invalid_token';
is post('session', { token => $tok })->{status}, 200, '... and it still signs in';

# one half expiring ends the change
my ($d) = $t->sign_in('d1@example.com');
post('email/change', { email => 'd2@example.com' }, $d);
my $dn = $t->last_email('d2@example.com', purpose => 'EmailChange');
my $do = $t->last_email('d1@example.com', purpose => 'EmailChangeApproval');
is post('email/confirm', { token => $dn->{token} })->{status}, 200, 'one half';
sleep 4.2;
is post('email/confirm', { token => $do->{token} })->{status}, 401, 'the other after the tokens\' lifetime: 401';
is $t->req(GET => '/auth/me', headers => { cookie => $d })->{json}{email}, 'd1@example.com', '... no change';

# a taken address: asking looks the same; the change is refused at the end
$t->sign_in('e2@example.com');
my ($e) = $t->sign_in('e1@example.com');
$r = post('email/change', { email => 'e2@example.com' }, $e);
is $r->{status}, 202, 'asking for a taken address: the same 202';
my $en = $t->last_email('e2@example.com', purpose => 'EmailChange');
my $eo = $t->last_email('e1@example.com', purpose => 'EmailChangeApproval');
ok $en && $eo, '... and the same two emails';
post('email/confirm', { token => $en->{token} });
$r = post('email/confirm', { token => $eo->{token} });
is $r->{status}, 409, 'the change: 409';
is $r->{json}{code}, 'email_taken', '... email_taken';
is $t->req(GET => '/auth/me', headers => { cookie => $e })->{json}{email}, 'e1@example.com', '... no change';

# bad bodies
is post('email/change', { email => 'not an address' }, $e)->{status}, 400, 'not an address: 400';
is post('email/confirm', { token => 'x', email => 'e1@example.com' })->{status}, 400, 'both forms at once: 400';
my ($rc, $audit) = $t->admin('audit', 300);
like $audit, qr/email\.changed/, 'the change is audited';
like $audit, qr/email\.change_failed/, '... and the refused one';
$t->done;
done_testing;
