# Short codes (issue #12): every email with a token shows an 8-character code,
# XXXX-XXXX, that POST /session and /token take with the address ({email, code, group?}), read
# case-insensitively with hyphens and spaces ignored; either form spends the one token; five wrong
# codes for an address cancel its tokens; an unknown address answers like a wrong code. Subjects
# and bodies name the site (signin_site_name).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(extra => 'signin_token_resend 0; signin_site_name "Acme Intranet"; signin_limits off;'));
my $O = { origin => $t->origin };
my $CODE = qr/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

sub email_for {
    my ($addr, $n) = @_;
    $t->req(POST => '/auth/register', json => { email => $addr });
    return $t->last_email($addr, count => $n // 1);
}

my $m = email_for('ann@example.com');
like $m->{code}, $CODE, 'the delivery carries a code XXXX-XXXX from the Crockford alphabet';
like $m->{text}, qr/\Q$m->{code}\E/, 'the email text shows the code';
like $m->{html}, qr/\Q$m->{code}\E/, 'and its HTML';
(my $outside_link = $m->{text}) =~ s{\Q$m->{link}\E}{}g;
unlike $outside_link, qr/\Q$m->{token}\E/, 'the 43-character token only inside the link';
like $m->{link}, qr{^http://127\.0\.0\.1:\d+/auth/#token=\Q$m->{token}\E$}, 'the link: the signin_api location, the token in the fragment';
like $m->{subject}, qr/Acme Intranet/, 'the subject names the site';
unlike $m->{subject}, qr/\Q$m->{code}\E/, 'but never the code';

(my $typed = lc $m->{code}) =~ s/-/ /;
my $r = $t->req(POST => '/auth/session', json => { email => 'Ann@Example.com', code => $typed }, headers => $O);
is $r->{status}, 200, 'POST /session {email, code}: lower case, a space for the hyphen, any address case';
ok SigninTest::set_cookie_pair($r), 'with the session cookie';
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => $O);
is $r->{status}, 401, 'the token of a spent code is spent';

$m = email_for('bea@example.com');
is $t->req(POST => '/auth/token', json => { token => $m->{token} })->{status}, 200, 'the token form still works';
is $t->req(POST => '/auth/token', json => { email => 'bea@example.com', code => $m->{code} })->{status}, 401,
    'and spends the code';

$m = email_for('cy@example.com');
$r = $t->req(POST => '/auth/token', json => { email => 'cy@example.com', code => $m->{code}, group => 'default' });
is $r->{status}, 200, 'POST /token {email, code, group}';
ok $r->{json}{access_token}, 'a bearer token';

# five wrong codes cancel every token of the address
my $first = email_for('dan@example.com');
$m = email_for('dan@example.com', 2);
my $wrong = $m->{code} eq '0000-0000' ? '1111-1111' : '0000-0000';
for my $i (1 .. 5) {
    $r = $t->req(POST => '/auth/token', json => { email => 'dan@example.com', code => $wrong });
    is $r->{status}, 401, "wrong code $i: 401";
    is $r->{json}{code}, 'invalid_token', "wrong code $i: invalid_token";
}
is $t->req(POST => '/auth/token', json => { email => 'dan@example.com', code => $m->{code} })->{status}, 401,
    'after five wrong codes the right one is refused';
is $t->req(POST => '/auth/token', json => { token => $first->{token} })->{status}, 401, 'and so is the older token';

# an unknown address answers exactly like a wrong code
my $u = $t->req(POST => '/auth/token', json => { email => 'nobody@example.com', code => 'ABCD-EFGH' });
is $u->{status}, 401, 'an unknown address: 401';
is $u->{content}, $r->{content}, 'with the body of a wrong code';

# one form or the other
for my $bad ({ token => 'x' x 43, email => 'a@example.com', code => 'ABCD-EFGH' }, { email => 'a@example.com' },
             { code => 'ABCD-EFGH' }, {}, { token => 'x' x 43, group => 'g' }) {
    $r = $t->req(POST => '/auth/token', json => $bad);
    is $r->{status}, 400, 'refused: ' . join(',', sort keys %$bad);
    is $r->{json}{code}, 'invalid_request', '... invalid_request';
}
$t->done;
done_testing;
