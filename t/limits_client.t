# The per-client request limits with their defaults: 30 per minute on endpoints that send
# email, exchange tokens or check passwords; 300 per minute on signed-in endpoints and
# signin_require. Two workers; many clients simulated with the realip module; `reuseport` spreads
# the connections over both workers, so an exact limit shows the counters are shared.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
mkdir $t->prefix . "/html"; mkdir $t->prefix . "/html/app";
open my $fh, '>', $t->prefix . "/html/app/x" or die; print $fh "app\n"; close $fh;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits zone=signin:1m;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-Pid $pid always;
        location /auth/ { signin_api; }
        location /app/ { signin_require on; root %%PREFIX%%/html; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});

sub from { my ($ip, %o) = @_; return (headers => { 'X-Forwarded-For' => $ip, %{ $o{headers} || {} } }) }

# ---------------------------------------------------------------- sensitive: 30 per minute
my %pids;
my @status;
for my $i (1 .. 30) {
    my $r = $t->req(POST => '/auth/login', json => { email => "nobody$i\@example.com" }, from('10.0.0.1'));
    push @status, $r->{status};
    $pids{ $r->{headers}{'x-pid'} // '' }++;
}
is_deeply [grep { $_ != 202 } @status], [], '30 sensitive requests from one client are served';
cmp_ok scalar(keys %pids), '>=', 2, 'they were spread over both workers: ' . join(',', map {"$_=$pids{$_}"} sort keys %pids);

my $r = $t->req(POST => '/auth/login', json => { email => 'nobody31@example.com' }, from('10.0.0.1'));
is $r->{status}, 429, 'the 31st within the minute is refused';
my $ra = $r->{headers}{'retry-after'};
like $ra // '', qr/^\d+$/, 'Retry-After in seconds';
cmp_ok $ra, '>=', 1, 'Retry-After at least 1';
cmp_ok $ra, '<=', 62, 'Retry-After within the window';
is $r->{json}{code}, 'rate_limited', 'code rate_limited';
is $r->{json}{retry_after}, $ra, 'retry_after in the body matches the header';
like $r->{json}{error}, qr/too many requests/, 'a sentence a person can read';
is $r->{headers}{'cache-control'}, 'no-store', 'no-store on the 429';

# the bucket is the client's, for every sensitive endpoint
$r = $t->req(POST => '/auth/session', json => { token => 'x' x 43 }, from('10.0.0.1', headers => { origin => $t->origin }));
is $r->{status}, 429, '/session shares the sensitive bucket';
$r = $t->req(POST => '/auth/token', json => { token => 'x' x 43 }, from('10.0.0.1'));
is $r->{status}, 429, '/token shares the sensitive bucket';
$r = $t->req(POST => '/auth/register', json => { email => 'new@example.com' }, from('10.0.0.1'));
is $r->{status}, 429, '/register shares the sensitive bucket';
$r = $t->req(POST => '/auth/password/session', json => { email => 'a@example.com', password => 'x' }, from('10.0.0.1'));
is $r->{status}, 429, '/password/session shares the sensitive bucket';
$r = $t->req(POST => '/auth/login', body => 'not json', headers => { 'X-Forwarded-For' => '10.0.0.1', 'content-type' => 'text/plain' });
is $r->{status}, 429, 'refused before the request is even looked at';

# another client is still served
$r = $t->req(POST => '/auth/login', json => { email => 'nobody@example.com' }, from('10.0.0.2'));
is $r->{status}, 202, 'another client is still served';
# signed-in endpoints are another bucket
$r = $t->req(GET => '/auth/me', from('10.0.0.1'));
is $r->{status}, 401, 'the limited client still reaches signed-in endpoints (401: no session)';

# ---------------------------------------------------------------- signed-in: 300 per minute
my ($cookie) = $t->sign_in('user@example.com');
my %seen;
my $served = 0;
for my $i (1 .. 300) {
    my $path = $i % 3 == 0 ? '/app/x' : $i % 3 == 1 ? '/auth/me' : '/auth/sessions';
    my $res = $t->req(GET => $path, from('10.0.0.3', headers => { cookie => $cookie, origin => $t->origin }));
    $seen{ $res->{status} }++;
    $served++ if $res->{status} == 200;
}
is $served, 300, '300 signed-in requests (/me, /sessions, signin_require) are served'
    or diag explain \%seen;
$r = $t->req(GET => '/auth/me', from('10.0.0.3', headers => { cookie => $cookie, origin => $t->origin }));
is $r->{status}, 429, 'the 301st is refused';
ok $r->{headers}{'retry-after'}, 'with Retry-After';
$r = $t->req(GET => '/app/x', from('10.0.0.3', headers => { cookie => $cookie, origin => $t->origin }));
is $r->{status}, 429, 'signin_require answers 429 too';
is $r->{json}{code}, 'rate_limited', 'as JSON';
$r = $t->req(POST => '/auth/logout', json => {}, from('10.0.0.3', headers => { cookie => $cookie, origin => $t->origin }));
is $r->{status}, 429, '/logout is a signed-in endpoint';
$r = $t->req(GET => '/auth/me', from('10.0.0.4', headers => { cookie => $cookie }));
is $r->{status}, 200, 'the same session from another client is served';

# ---------------------------------------------------------------- audit
my $audit = '';
$t->wait_for(sub {
    (undef, $audit) = $t->admin('audit', 200);
    $audit =~ /throttled.*10\.0\.0\.3/ && $audit =~ /throttled.*10\.0\.0\.1/;
}, timeout => 5);
my @throttled = grep { /"throttled"/ } split /\n/, $audit;
ok((grep { /10\.0\.0\.1/ && /sensitive:login/ } @throttled), 'the audit trail records the throttled client and endpoint')
    or diag $audit;
ok((grep { /10\.0\.0\.3/ && /signed_in/ } @throttled), 'and the signed-in refusals');
cmp_ok scalar(grep { /10\.0\.0\.1/ } @throttled), '<=', 2, 'one entry per client and window, not one per refusal';
unlike $audit, qr/x{43}/, 'no token in the audit trail';

# ---------------------------------------------------------------- IPv6: a /64 is one client
# (issue #19 item 9): 30 sensitive requests spread over a /64's addresses use up its limit
for my $i (1 .. 30) {
    my $r = $t->req(POST => '/auth/login', json => { email => "v6-$i\@example.com" }, from("2001:db8:7:7::$i"));
    die "v6 request $i answered $r->{status}" unless $r->{status} == 202;
}
is $t->req(POST => '/auth/login', json => { email => 'v6@example.com' }, from('2001:db8:7:7:ffff::1'))->{status}, 429,
    'the 31st from another address of the same /64 is refused';
is $t->req(POST => '/auth/login', json => { email => 'v6@example.com' }, from('2001:db8:7:8::1'))->{status}, 202,
    'the next /64 is another client';

# ---------------------------------------------------------------- failed exchanges: off by default
# (issue #19 item 9) a client behind which many people sit gets its valid token exchanged after
# a dozen failed ones; SPEC's 30 sensitive requests a minute per client is the bound
my $good = $t->request_token('nat@example.com');
is $t->req(POST => '/auth/token', json => { token => "x$_" . ('a' x 40) }, from('10.0.9.1'))->{status}, 401,
    "failed exchange $_ from one client" for 1 .. 12;
is $t->req(POST => '/auth/token', json => { token => $good }, from('10.0.9.1'))->{status}, 200,
    'then a valid token from the same client is exchanged';

$t->done;
done_testing;
