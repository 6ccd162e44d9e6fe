# signin_passwords off (the default): every password endpoint answers 403 passwords_disabled and
# nothing else; the password directives' configuration errors stop nginx -t.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
my $http = $t->password_http('');
(my $off = $http) =~ s/signin_passwords on;//;
$t->run(http => $off);

for my $path (qw(password password/register password/session password/token password/change)) {
    my $r = $t->req(POST => "/auth/$path", json => { email => 'a@example.com', password => 'violet tractor hums quietly' },
        headers => { origin => $t->origin }, finished => 1);
    is $r->{status}, 403, "POST /$path is 403 when passwords are off";
    is $r->{json}{code}, 'passwords_disabled', "... code passwords_disabled";
    is $r->{headers}{'cache-control'}, 'no-store', '... no-store';
    $r = $t->req(GET => "/auth/$path");
    is $r->{status}, 403, "GET /$path is the same 403 (no password page exists)";
}
$t->assert_nothing_sent('a@example.com', name => 'nothing was sent');
$t->done;

# ---------------------------------------------------------------- nginx -t
my $c = SigninTest->new;
my ($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_min_length 7;'));
isnt $rc, 0, 'signin_password_min_length 7 fails nginx -t';
like $out, qr/invalid signin_password_min_length "7".*from 8.*nginx\.conf:\d+/s, '... naming the rule, file and line';
($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_min_length 8;'));
is $rc, 0, 'signin_password_min_length 8 is accepted' or diag $out;
($rc, $out) = $c->nginx_t(http => $c->password_http(''));
is $rc, 0, 'signin_passwords on passes nginx -t' or diag $out;

open my $fh, '>', $c->prefix . '/bad.bin' or die;
print $fh 'x' x 33;
close $fh;
($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_blocklist ' . $c->prefix . '/bad.bin;'));
isnt $rc, 0, 'a blocklist whose size is not a multiple of 32 fails nginx -t';
like $out, qr/multiple of 32/, '... saying why';
($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_blocklist ' . $c->prefix . '/missing.bin;'));
isnt $rc, 0, 'a missing blocklist fails nginx -t';
($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_hash t=0;'));
isnt $rc, 0, 'signin_password_hash t=0 fails nginx -t';
($rc, $out) = $c->nginx_t(http => $c->password_http('signin_password_hash t=1 m=8m;'));
is $rc, 0, 'a weaker hash setting is accepted ...';
like $out, qr/weaker than Argon2id/, '... with a warning';

# ---------------------------------------------------------------- passwords on, registration off
my $n = SigninTest->new;
(my $noreg = $n->password_http('')) =~ s/signin_registration on;//;
$n->run(http => $noreg);
my $r = $n->password_req(register => 'a@example.com', 'violet tractor hums quietly');
is $r->{status}, 403, 'password registration follows signin_registration';
is $r->{json}{code}, 'registration_disabled', '... registration_disabled';
$r = $n->req(GET => '/auth/password/session');
is $r->{status}, 405, 'with passwords on, GET on a password endpoint is 405';
$n->done;

done_testing;
