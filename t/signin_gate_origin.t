# The gate refuses a cookie-carrying state change whose Origin is present and wrong (for the
# legacy upstreams behind signin_require); and without a signin_limits zone the
# password attempt limits still apply (per worker) instead of none.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(workers => 1, http => $t->signin_http(
    extra     => q{signin_passwords on;},
    locations => q{location /app/ { signin_require on; proxy_pass http://127.0.0.1:%%PORT2%%; }},
    servers   => q{server { listen 127.0.0.1:%%PORT2%%; location / { return 200 "legacy"; } }},
));

my $cookie = $t->sign_in('gate@example.com');
my %h = (cookie => $cookie);
is $t->req(POST => '/app/x', headers => { %h, origin => 'https://evil.example' }, body => 'a=1')->{status}, 403,
    'a cookie POST with a wrong origin is refused at the gate';
is $t->req(POST => '/app/x', headers => { %h, origin => $t->origin }, body => 'a=1')->{status}, 200,
    'with the site origin it passes';
is $t->req(POST => '/app/x', headers => \%h, body => 'a=1')->{status}, 200, 'without an origin it passes (not a browser)';
is $t->req(GET => '/app/x', headers => { %h, origin => 'https://evil.example' })->{status}, 200,
    'a GET is not a state change';

# passwords with no zone: the 6th wrong password from one client waits (5 are free)
my $pw = 'correct horse battery staple 42';
my $email = 'pw-nozone@example.com';
my $r = $t->req(POST => '/auth/password/register', json => { email => $email, password => $pw });
is $r->{status}, 202, 'password registration' or diag $r->{content};
my $m = $t->last_email($email);
is $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin })->{status}, 200,
    'account created';
my @st = map { $t->req(POST => '/auth/password/token', json => { email => $email, password => "wrong $_ password here" })->{status} } 1 .. 6;
is_deeply [@st[0 .. 4]], [(401) x 5], 'five wrong passwords: 401';
is $st[5], 429, 'the sixth must wait: attempt limits apply without a signin_limits zone';
$t->done;
done_testing;
