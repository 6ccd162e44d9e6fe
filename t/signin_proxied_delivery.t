# Delivery through proxy_pass to a mailer, as in production: the subrequest's own body is the
# delivery JSON (application/json), so a plain proxy_pass sends it; the mailer gets it without the
# visitor's cookies even with proxy_pass_request_headers on (the module gives the subrequest no
# client headers), and its 2xx counts as delivered (the token works). With error_log at debug
# level, no token is written to it: nothing passes the token through an nginx variable (issue #19
# item 3). The older recipe with proxy_set_body $signin_delivery_json still delivers.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(main => "thread_pool default threads=4;\nerror_log %%PREFIX%%/debug.log debug;", http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits off;
    log_format mailer '$http_cookie|$http_authorization|$content_type';
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/send;
        }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /send { access_log %%PREFIX%%/mailer.log mailer; signin_dev_mailbox; }
        location = /box { signin_dev_mailbox; }
    }
});

my $email = 'proxied@example.com';
my $r;
$r = $t->req(POST => '/auth/register', json => { email => $email }, headers => { cookie => 'other=1; theme=dark' });
is $r->{status}, 202, 'register answers 202';
my $m;
for (1 .. 50) {
    ($m) = grep { $_->{email} eq $email } @{ $t->req(GET => '/box', port => $t->port2)->{json}{emails} || [] };
    last if $m;
    select undef, undef, undef, 0.05;
}
ok $m && $m->{token}, 'the mailer received the delivery JSON through proxy_pass';
is $m->{purpose}, 'Registration', 'with its purpose';
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin });
is $r->{status}, 200, "the mailer's 2xx counted as delivered: the token works";
my @lines;
for (1 .. 40) {   # the access log line is written when the mailer's request ends
    if (open my $fh, '<', $t->prefix . '/mailer.log') { @lines = <$fh>; }
    last if @lines;
    select undef, undef, undef, 0.05;
}
ok @lines >= 1, 'the mailer logged the request';
unlike join('', @lines), qr/theme=dark|other=1/, "the visitor's cookies did not reach the mailer";
like $lines[0], qr/\|application\/json$/m, 'the mailer got content-type application/json';

# a whole sign-in at debug level: the token of the email and the session secret
my $cookie = SigninTest::set_cookie_pair($r);
my ($secret) = $cookie =~ /=(.*)/;
is $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{status}, 200, 'signed in';
my $debug = do { local $/; open my $fh, '<', $t->prefix . '/debug.log' or die; <$fh> };
like $debug, qr/\[debug\]/, 'error.log is at debug level';
like $debug, qr/http proxy header/, '... and logged the proxied delivery';
unlike $debug, qr/\Q$m->{token}\E/, 'the delivered token is nowhere in the debug log';

$t->done;

# the older recipe (proxy_set_body $signin_delivery_json) still delivers
my $t2 = SigninTest->new;
$t2->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    signin_limits off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver {
            internal;
            proxy_set_header Content-Type application/json;
            proxy_set_body $signin_delivery_json;
            proxy_pass http://127.0.0.1:%%PORT2%%/send;
        }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /send { signin_dev_mailbox; }
        location = /box { signin_dev_mailbox; }
    }
});
$r = $t2->req(POST => '/auth/register', json => { email => 'old-recipe@example.com' });
is $r->{status}, 202, 'register through the proxy_set_body recipe';
ok $t2->wait_for(sub { grep { $_->{email} eq 'old-recipe@example.com' }
                       @{ $t2->req(GET => '/box', port => $t2->port2)->{json}{emails} || [] } }),
   '... is delivered too';
$t2->done;
done_testing;
