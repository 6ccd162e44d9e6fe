# A state change authenticated by the session cookie is a cookie write (issue #19
# item 10): POST /logout, /sessions/revoke, /password and /password/change need the
# configured Origin, or a browser's `Sec-Fetch-Site: same-origin`; without either they answer
# 403 origin_mismatch and change nothing. Bearer clients need not send Origin.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $GOOD = 'violet tractor hums quietly';
my $t = SigninTest->new;
$t->run(http => $t->password_http);

my $cookie = $t->sign_in('writer@example.com');
my $me = sub { $t->req(GET => '/auth/me', headers => { cookie => $_[0] })->{status} };
is $me->($cookie), 200, 'signed in by cookie';

my @writes = (
    ['/auth/logout', {}],
    ['/auth/sessions/revoke', { id => 'x' }],
    ['/auth/password', { password => $GOOD }],
    ['/auth/password/change', { current => $GOOD, password => "$GOOD too" }],
);
for my $w (@writes) {
    my ($path, $body) = @$w;
    my $r = $t->req(POST => $path, json => $body, headers => { cookie => $cookie });
    is $r->{status}, 403, "$path by cookie without Origin: 403";
    is $r->{json}{code}, 'origin_mismatch', '... origin_mismatch';
    $r = $t->req(POST => $path, json => $body, headers => { cookie => $cookie, origin => 'https://evil.example' });
    is $r->{status}, 403, "$path by cookie with another Origin: 403";
    $r = $t->req(POST => $path, json => $body,
                 headers => { cookie => $cookie, 'sec-fetch-site' => 'cross-site' });
    is $r->{status}, 403, "$path by cookie from a cross-site fetch: 403";
}
is $me->($cookie), 200, 'none of the refused writes ended the session';
my $pw = $t->req(POST => '/auth/password/session', json => { email => 'writer@example.com', password => $GOOD },
                 headers => { origin => $t->origin });
is $pw->{status}, 401, 'and no password was set';

# a browser's same-origin fetch may leave Origin out: Sec-Fetch-Site says it is same-origin
my $r = $t->req(POST => '/auth/password', json => { password => $GOOD },
                headers => { cookie => $cookie, 'sec-fetch-site' => 'same-origin' });
is $r->{status}, 204, 'POST /password by cookie with Sec-Fetch-Site: same-origin' or diag $r->{content};
$r = $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, origin => $t->origin });
is $r->{status}, 204, 'POST /logout by cookie with the site Origin';
is $me->($cookie), 401, '... ends the session';

# bearer clients are not browsers: no Origin needed
my $bearer = $t->bearer('writer@example.com');
$r = $t->req(POST => '/auth/logout', json => {}, headers => { authorization => "Bearer $bearer" });
is $r->{status}, 204, 'POST /logout by bearer without Origin: 204';

$t->done;
done_testing;
