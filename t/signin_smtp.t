# Email over SMTP (signin_smtp): a real SMTP server (t/smtp-server, Debian's python3-aiosmtpd)
# receives the sign-in emails; the code in the received message signs in. Plain on loopback,
# STARTTLS verified against a throw-away CA (and refused with another CA), AUTH with a password
# that never reaches error.log, a 451 tried again, a 550 refused for good (its token dead), a
# relay down then up, and what nginx -t says of wrong settings.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(time sleep);
use lib 't/lib'; use SigninTest; use SigninSmtp;

my $ROOT = $ENV{SIGNIN_ROOT} || '.';
my $PY = $SigninSmtp::PY;
plan skip_all => 'python3-aiosmtpd is not installed (apt-get install python3-aiosmtpd): no SMTP server to send to'
    unless $PY;

sub conf {
    my (%o) = @_;
    my $url = $o{url} // 'smtp://127.0.0.1:%%PORT2%%';
    return qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_token_resend 0;
    signin_limits off;
    signin_smtp $url;
    signin_smtp_from "Acme Sign-in <no-reply\@acme.example>";
    signin_smtp_timeout 3s;
    @{[ $o{extra} // '' ]}
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /metrics { signin_metrics; }
    }
};
}

sub register {
    my ($t, $email) = @_;
    return $t->req(POST => '/auth/register', json => { email => $email })->{status};
}

sub exchange {
    my ($t, $email, $code) = @_;
    return $t->req(POST => '/auth/session', json => { email => $email, code => $code }, headers => { origin => $t->origin });
}

sub metric {
    my ($t, $transport, $result) = @_;
    my $text = $t->req(GET => '/metrics')->{content} // '';
    return $text =~ /^signin_deliveries_total\{transport="$transport",result="$result"\} (\d+)/m ? $1 : undef;
}

# ================================================================ plain SMTP on loopback
{
    my $t = SigninTest->new;
    my $relay = SigninSmtp::Relay->new(port => $t->port2);
    $t->run(http => conf());
    is register($t, 'ann@example.com'), 202, 'register: 202';
    ok $t->wait_for(sub { $relay->messages >= 1 }, timeout => 10), "the relay received an email"
        or diag $t->error_log, $relay->events;
    my ($file) = $relay->messages;
    my ($code, $m) = SigninSmtp::code_of($file);
    like $code, qr/^[0-9A-Z]{4}-[0-9A-Z]{4}$/, 'it carries the code';
    like $m->{headers}{From}, qr/Acme Sign-in <no-reply\@acme\.example>/, 'From: signin_smtp_from';
    is $m->{headers}{To}, 'ann@example.com', 'To: the address';
    is $m->{headers}{'Auto-Submitted'}, 'auto-generated', 'Auto-Submitted: auto-generated';
    is_deeply [map { $_->{content_type} } @{ $m->{parts} }], ['text/plain', 'text/html'], 'text and HTML parts';
    is_deeply $m->{defects}, [], 'no defect found by Python\'s email package';
    my $r = exchange($t, 'ann@example.com', $code);
    is $r->{status}, 200, 'the code of the received email signs in';
    ok $t->wait_for(sub { (metric($t, 'smtp', 'sent') // 0) >= 1 }, timeout => 5),
        'signin_deliveries_total{transport="smtp",result="sent"} counts it';
    is metric($t, 'http', 'sent'), 0, 'and the http series stay at 0';

    # several at once: one batch, one connection
    register($t, "many$_\@example.com") for 1 .. 5;
    ok $t->wait_for(sub { $relay->messages >= 6 }, timeout => 10), 'five more emails arrived';
    $t->done;
}

# ================================================================ STARTTLS, a throw-away CA; a wrong CA
{
    my $cadir = tempdir(CLEANUP => 1);
    my $other = tempdir(CLEANUP => 1);
    # the CA is read with the configuration (by root here): the workers need no access to it
    chmod 0700, $cadir;
    chmod 0755, $other;
    system("'$PY' '$ROOT/t/smtp-server' ca '$cadir' localhost 127.0.0.1") == 0 or die 'ca';
    system("'$PY' '$ROOT/t/smtp-server' ca '$other' localhost 127.0.0.1") == 0 or die 'ca';

    my $t = SigninTest->new;
    my $relay = SigninSmtp::Relay->new(port => $t->port2, tls => 'starttls', 'cert-dir' => $cadir);
    $t->run(http => conf(url => 'smtp://localhost:%%PORT2%%', extra => "signin_smtp_trusted_certificate $cadir/ca.pem;"));
    is register($t, 'tls@example.com'), 202, 'STARTTLS: 202';
    ok $t->wait_for(sub { $relay->messages >= 1 }, timeout => 10), 'STARTTLS: delivered'
        or diag join "\n", grep { /warn/ } split /\n/, $t->error_log;
    like $relay->events, qr/^starttls /m, 'over STARTTLS';
    my ($code) = SigninSmtp::code_of(($relay->messages)[0]);
    is exchange($t, 'tls@example.com', $code)->{status}, 200, 'its code signs in';
    $t->done;

    my $t2 = SigninTest->new;
    my $relay2 = SigninSmtp::Relay->new(port => $t2->port2, tls => 'starttls', 'cert-dir' => $cadir);
    $t2->run(http => conf(url => 'smtp://localhost:%%PORT2%%', extra => "signin_smtp_trusted_certificate $other/ca.pem;"));
    is register($t2, 'wrongca@example.com'), 202, 'wrong CA: 202 (the visitor is not told)';
    ok $t2->wait_for(sub { (metric($t2, 'smtp', 'retried') // 0) >= 1 }, timeout => 10),
        'wrong CA: the send is counted as retried';
    sleep 1;
    is scalar($relay2->messages), 0, 'wrong CA: nothing delivered';
    like $t2->error_log, qr/\[warn\].*signin: smtp: an email \(\w+, try 1\) was not sent/, 'error.log says why';
    $t2->done;
}

# ================================================================ AUTH: the password never in error.log
{
    my $t = SigninTest->new;
    my $secret = 'Pa55-never-logged-' . int(rand(1e9));
    my $auth = $t->prefix . '/smtp.auth';
    open my $fh, '>', $auth or die $!;
    print $fh "mailer:$secret\n";
    close $fh;
    my $relay = SigninSmtp::Relay->new(port => $t->port2, auth => "mailer:$secret");
    $t->run(http => conf(extra => "signin_smtp_auth_file $auth;"),
        main => "thread_pool default threads=4;\nerror_log %%PREFIX%%/debug.log debug;");
    is register($t, 'auth@example.com'), 202, 'AUTH: 202';
    ok $t->wait_for(sub { $relay->messages >= 1 }, timeout => 10), 'AUTH: delivered';
    like $relay->events, qr/^auth \d+ \S+ mailer ok/m, 'after logging in as the user of the auth file';
    my ($code) = SigninSmtp::code_of(($relay->messages)[0]);
    is exchange($t, 'auth@example.com', $code)->{status}, 200, 'its code signs in';
    $t->done;
    my $debug = do { local $/; open my $d, '<', $t->prefix . '/debug.log'; <$d> } // '';
    ok length($debug) > 0, 'a debug-level log was written';
    ok index($debug, $secret) < 0 && index($t->error_log, $secret) < 0, 'the password is in no log, at debug level either';
    ok index($debug, $code) < 0, 'nor the code';
}

# ================================================================ 451 then 250: delivered once
{
    my $t = SigninTest->new;
    my $relay = SigninSmtp::Relay->new(port => $t->port2, data => '451,250');
    $t->run(http => conf());
    is register($t, 'later@example.com'), 202, '451 then 250: 202';
    ok $t->wait_for(sub { $relay->messages >= 1 }, timeout => 10), 'delivered after the 451';
    sleep 2;
    is scalar($relay->messages), 1, 'once';
    my @data = $relay->events =~ /^data \d+ (\d+)/mg;
    is_deeply \@data, [451, 250], 'the DATA was answered 451, then 250';
    my ($code) = SigninSmtp::code_of(($relay->messages)[0]);
    is exchange($t, 'later@example.com', $code)->{status}, 200, 'its code signs in';
    like $t->error_log, qr/reply 451/, 'the 451 is logged with its reply code';
    $t->done;
}

# ================================================================ 550: tried once, the token dead
{
    my $t = SigninTest->new;
    my $relay = SigninSmtp::Relay->new(port => $t->port2, rcpt => '550');
    $t->run(http => conf());
    is register($t, 'nobody@example.com'), 202, '550: 202';
    ok $t->wait_for(sub { my (undef, $a) = $t->admin('audit', 20); $a =~ /delivery\.failed/ }, timeout => 10),
        'delivery.failed is audited';
    my (undef, $audit) = $t->admin('audit', 20);
    like $audit, qr/smtp 550/, 'with the SMTP reply code';
    sleep 2;
    my @rcpt = $relay->events =~ /^rcpt \d+ \S+ (\d+)/mg;
    is scalar(@rcpt), 1, 'tried once';
    is scalar($relay->messages), 0, 'nothing delivered';
    is metric($t, 'smtp', 'failed'), 1, 'counted as failed';
    my (undef, $outbox) = $t->admin('stats');
    like $outbox, qr/"outbox":0\b/, 'nothing waits in the outbox';
    like $t->error_log, qr/reply 550.*refused for good/, 'error.log says it was refused for good';
    $t->done;
}

# ================================================================ the relay down, then up
{
    my $t = SigninTest->new;
    $t->run(http => conf());
    is register($t, 'waiting@example.com'), 202, 'relay down: 202';
    ok $t->wait_for(sub { (metric($t, 'smtp', 'retried') // 0) >= 2 }, timeout => 10), 'tried again while it is down';
    my $relay = SigninSmtp::Relay->new(port => $t->port2);
    ok $t->wait_for(sub { $relay->messages >= 1 }, timeout => 20), 'delivered once the relay is up';
    my ($code) = SigninSmtp::code_of(($relay->messages)[0]);
    is exchange($t, 'waiting@example.com', $code)->{status}, 200, 'and the code that waited signs in';
    $t->done;
}

# ================================================================ nginx -t
{
    my $t = SigninTest->new;
    my ($rc, $out) = $t->nginx_t(http => conf(extra => "signin_delivery /_deliver;"));
    isnt $rc, 0, 'signin_smtp with signin_delivery: refused';
    like $out, qr/\[emerg\] (?:\d+#\d+: )?signin_smtp and signin_delivery both send the emails.* in \S+nginx\.conf:\d+\n/,
        'on a line of its own, naming the file and line';

    my $noform = conf() =~ s/\n\s*signin_smtp_from[^\n]*//r;
    ($rc, $out) = $t->nginx_t(http => $noform);
    isnt $rc, 0, 'without signin_smtp_from: refused';
    like $out, qr/\[emerg\] (?:\d+#\d+: )?signin_smtp needs signin_smtp_from.* in \S+nginx\.conf:\d+\n/, 'said on its own line';

    my $unreadable = $t->prefix . '/no-such.auth';
    ($rc, $out) = $t->nginx_t(http => conf(url => 'smtp:/relay', extra => "signin_smtp_auth_file $unreadable;"));
    isnt $rc, 0, 'a malformed URL and an unreadable auth file: refused';
    my @lines = grep { /\[emerg\]/ } split /\n/, $out;
    ok((grep { /\[emerg\] (?:\d+#\d+: )?signin_smtp is smtp:.* in \S+nginx\.conf:\d+$/ } @lines), 'the URL on a line of its own')
        or diag $out;
    ok((grep { /\[emerg\] (?:\d+#\d+: )?signin_smtp_auth_file "\Q$unreadable\E" cannot be read.* in \S+nginx\.conf:\d+$/ } @lines),
        'the auth file on another') or diag $out;
}

done_testing;
