# signin_new_signin_notice: a sign-in from a browser or app the account has not seen before emails
# its owner a NewSignIn notice (tag auth.new_sign_in): when, browser and system, the client's
# address, and a link to the account page. Never for the account's first sign-in; the same
# browser again is told nothing; a made-up cookie value is not a known browser; a bearer sign-in
# (an app) always counts as new; the known-browser cookie never reaches the upstream; off sends
# nothing and sets no cookie. nginx -t refuses the notice without a way to send email.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http(
    extra => q{signin_limits off; signin_new_signin_notice on;},
    auth => q{signin_pages on;},
    locations => q{
        location /app/ {
            signin_require on;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
    },
    servers => q{
        server {
            listen 127.0.0.1:%%PORT2%%;
            location / { return 200 "cookie=[$http_cookie]\n"; }
        }
    },
), wait_ports => [$t->port, $t->port2]);
my $O = { origin => $t->origin };
my $firefox = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';
my $safari = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) '
    . 'Version/17.5 Mobile/15E148 Safari/604.1';

sub set_cookies { my ($r) = @_; my $sc = $r->{headers}{'set-cookie'} // []; return ref $sc ? @$sc : ($sc) }
# A browser: its cookie jar, kept from every answer, and its User-Agent.
sub browser { return { jar => {}, ua => $_[0] // $firefox } }
sub enter {
    my ($b, $email) = @_;
    my $token = $t->request_token($email);
    my %h = (%$O, 'user-agent' => $b->{ua});
    $h{cookie} = join '; ', map { "$_=$b->{jar}{$_}" } sort keys %{ $b->{jar} } if %{ $b->{jar} };
    my $r = $t->req(POST => '/auth/session', json => { token => $token }, headers => \%h);
    for (set_cookies($r)) {
        my ($n, $v) = /^([^=]+)=([^;]*)/ or next;
        $b->{jar}{$n} = $v;
    }
    return $r;
}
sub notices { my ($email) = @_; return grep { $_->{purpose} eq 'NewSignIn' } $t->emails_to($email) }
# Waits for the nth notice to an address (they come from the outbox's check, about once a second).
sub nth_notice { my ($email, $n) = @_; return $t->last_email($email, purpose => 'NewSignIn', count => $n, timeout => 10) }

my $ann = 'ann@example.com';
my $home = browser();
my $r = enter($home, $ann);
is $r->{status}, 200, 'ann signs in for the first time';
my ($line) = grep { /^svc_dev_known=/ } set_cookies($r);
ok $line, '... and gets the known-browser cookie';
like $line // '', qr/^svc_dev_known=[A-Za-z0-9_-]{43}; /, '... a 32-byte random value';
like $line // '', qr/HttpOnly/, '... HttpOnly';
like $line // '', qr/SameSite=Lax/, '... SameSite=Lax';
like $line // '', qr/Max-Age=34560000\b/, '... kept 400 days';
my $known = $home->{jar}{svc_dev_known};

$r = enter($home, $ann);
is $r->{status}, 200, 'ann again, from the same browser';
is $home->{jar}{svc_dev_known}, $known, '... which keeps its value';

# the upstream sees neither the session nor the known-browser cookie
$r = $t->req(GET => '/app/x', headers => { cookie => "svc_dev_session=$home->{jar}{svc_dev_session}; svc_dev_known=$known; theme=dark" });
is $r->{status}, 200, 'the gate lets ann in';
like $r->{content}, qr/theme=dark/, '... the site\'s own cookies pass';
unlike $r->{content}, qr/svc_dev_known/, '... the known-browser cookie does not';

my $phone = browser($safari);
$r = enter($phone, $ann);
is $r->{status}, 200, 'ann from her phone, a browser this account has not seen';
isnt $phone->{jar}{svc_dev_known}, $known, '... which gets its own value';
my $n = nth_notice($ann, 1);
ok $n, '... and one NewSignIn notice goes out';
is scalar(notices($ann)), 1, '... only one: neither the first sign-in nor the same browser again sent one';
is $n->{tag}, 'auth.new_sign_in', '... tagged auth.new_sign_in';
is $n->{token} // '', '', '... with no token';
like $n->{subject}, qr/^New sign-in to your account on /, '... its subject';
like $n->{text}, qr/Browser: Safari 17 on iOS 17\n/, '... naming the browser and system';
like $n->{text}, qr/IP address: 127\.0\.0\.1\n/, '... the client\'s address';
like $n->{text}, qr/When: \w+ \d+, \d{4} at \d+:\d\d.{1,3}[AP]M UTC\n/, '... and when, in UTC';
is $n->{link}, $t->origin . '/auth/account', '... with a link to the account page';
like $n->{text}, qr{See where your account is signed in: \Q${\ $t->origin}\E/auth/account\n}, '... in the text too';

# a made-up value is nobody's known browser
my $forger = browser();
$forger->{jar}{svc_dev_known} = 'A' x 43;
enter($forger, $ann);
ok nth_notice($ann, 2), 'a made-up cookie value: a notice';
# a bearer sign-in is an app: never known
my $token = $t->request_token($ann);
$r = $t->req(POST => '/auth/token', json => { token => $token }, headers => { 'user-agent' => 'curl/8.5.0' });
is $r->{status}, 200, 'ann signs an app in';
ok !(grep { /^svc_dev_known=/ } set_cookies($r)), '... which gets no cookie';
my $app = nth_notice($ann, 3);
ok $app, '... and a notice';
like $app->{text} // '', qr/Browser: curl 8\n/, '... naming the tool';
# the known browsers again, after the last notice: nothing more
enter($home, $ann);
enter($phone, $ann);
my $bob = 'bob@example.com';
enter(browser(), $bob);
my $bob_new = browser();
enter($bob_new, $bob);
ok nth_notice($bob, 1), 'bob from a second browser: a notice (sent after ann\'s known browsers signed in)';
is scalar(notices($ann)), 3, '... and ann\'s known browsers sent none';

my ($code, $audit) = $t->admin('audit', '--email', $ann);
like $audit, qr/notice\.new_sign_in/, 'the notice is audited';

# off: no cookie, no notice
my $off = SigninTest->new;
$off->run(http => $off->signin_http(extra => q{signin_limits off;}));
my $cookie = $off->sign_in($ann);
my $tok = $off->request_token($ann);
$r = $off->req(POST => '/auth/session', json => { token => $tok }, headers => { origin => $off->origin });
ok !(grep { /^svc_dev_known=/ } set_cookies($r)), 'off: no known-browser cookie';
$off->assert_nothing_sent($ann, count => 2, name => 'off: only the two sign-in emails, no notice');
$off->done;

# nginx -t: the notice needs a way to send email
my $bad = SigninTest->new;
my ($rc, $out) = $bad->nginx_t(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_email off;
    signin_passkeys on;
    signin_new_signin_notice on;
    server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } }
});
ok $rc != 0, 'nginx -t refuses the notice without a way to send email';
like $out, qr/signin_new_signin_notice needs a way to send email.* in .*:\d+/, '... naming the directive, file and line';

$t->done;
done_testing;
