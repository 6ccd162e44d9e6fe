# Email over SMTP to a real MTA: Debian's exim4 (exim4-daemon-light), run in the foreground on a
# loopback port from a configuration in a temporary directory (its own spool, log and maildir;
# nothing of the system's exim is used or started). The message goes through exim's checks of
# the envelope and headers into a maildir; Python's email package parses it there and its code
# signs in. A recipient exim refuses (550 at RCPT) is refused for good: the code is dead.
# Skipped when exim4 is not installed.
use strict; use warnings;
use Test::More;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time sleep);
use lib 't/lib'; use SigninTest;

my $ROOT = $ENV{SIGNIN_ROOT} || '.';
my ($EXIM) = grep { -x } qw(/usr/sbin/exim4 /usr/sbin/exim);
plan skip_all => 'exim4 is not installed (apt-get install exim4-daemon-light): no MTA to send to' unless $EXIM;
plan skip_all => 'exim takes a configuration of its own (-C) and its spool from root only' unless $> == 0;
my $PY = SigninTest::python_with('email') or plan skip_all => 'no python3 to parse the message';
my $exim_user = getpwnam('Debian-exim') ? 'Debian-exim' : getpwnam('exim') ? 'exim' : undef;
plan skip_all => 'no exim user (Debian-exim)' unless defined $exim_user;

my $t = SigninTest->new;
my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my (undef, undef, $uid, $gid) = getpwnam($exim_user);
for my $sub (qw(spool log mail)) {
    mkdir "$dir/$sub" or die $!;
    chown $uid, $gid, "$dir/$sub";
}
my $port = $t->port2;
open my $cf, '>', "$dir/exim.conf" or die $!;
print $cf <<"CONF";
primary_hostname = relay.test
spool_directory = $dir/spool
log_file_path = $dir/log/%slog
pid_file_path = $dir/exim.pid
daemon_smtp_ports = $port
local_interfaces = <; 127.0.0.1
keep_environment =
tls_advertise_hosts =
acl_smtp_rcpt = acl_rcpt
begin acl
acl_rcpt:
  deny    local_parts = nobody-here
          message = 5.1.1 no such user here
  accept
begin routers
all:
  driver = accept
  transport = to_maildir
begin transports
to_maildir:
  driver = appendfile
  directory = $dir/mail
  maildir_format
  user = $exim_user
  mode = 0644
CONF
close $cf;

# in the foreground (-bdf), delivering at once (-odi); stopped below
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>', "$dir/daemon.out";
    open STDERR, '>&', \*STDOUT;
    exec $EXIM, '-C', "$dir/exim.conf", '-bdf', '-odi' or POSIX::_exit(127);
}
END { if ($pid) { kill 'TERM', $pid; waitpid $pid, 0 } }
my $up = $t->wait_for(sub { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1) }, timeout => 10);
ok $up, 'exim listens' or diag `cat $dir/daemon.out $dir/log/* 2>/dev/null`;

$t->run(http => qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_token_resend 0;
    signin_limits off;
    signin_smtp smtp://127.0.0.1:$port;
    signin_smtp_from "Acme Sign-in <no-reply\@acme.example>";
    signin_smtp_timeout 5s;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
    }
});

sub delivered { my @m = sort glob "$dir/mail/new/*"; return @m }
sub exim_log { join '', map { local $/; open my $fh, '<', $_ or return ''; <$fh> } glob "$dir/log/*" }

is $t->req(POST => '/auth/register', json => { email => 'ann@example.com' })->{status}, 202, 'register: 202';
ok $t->wait_for(sub { delivered() >= 1 }, timeout => 15), 'exim took the email and delivered it'
    or diag $t->error_log, exim_log();
my ($file) = delivered();
my $m = $SigninTest::JSON->decode(scalar `'$PY' '$ROOT/t/smtp-server' parse '$file'`);
like $m->{headers}{From}, qr/no-reply\@acme\.example/, 'From: signin_smtp_from';
is $m->{headers}{To}, 'ann@example.com', 'To: the address';
like $m->{headers}{'Message-ID'}, qr/\@acme\.example>$/, 'Message-ID under the From domain';
is_deeply [map { $_->{content_type} } @{ $m->{parts} }], ['text/plain', 'text/html'], 'text and HTML parts';
is_deeply $m->{defects}, [], 'no defect found by Python\'s email package';
my ($text) = map { $_->{text} } grep { $_->{content_type} eq 'text/plain' } @{ $m->{parts} };
my ($code) = ($text // '') =~ /\b([0-9A-Z]{4}-[0-9A-Z]{4})\b/;
ok $code, 'it carries the code';
my $r = $t->req(POST => '/auth/session', json => { email => 'ann@example.com', code => $code },
    headers => { origin => $t->origin });
is $r->{status}, 200, 'the code that came through exim signs in';
like exim_log(), qr/<= no-reply\@acme\.example .*P=esmtp/, "exim's log: received over ESMTP from signin_smtp_from";

# a recipient exim refuses at RCPT: refused for good, no retry
is $t->req(POST => '/auth/register', json => { email => 'nobody-here@example.com' })->{status}, 202,
    'a refused address: 202 (the visitor is not told)';
ok $t->wait_for(sub { $t->error_log =~ /refused for good/ }, timeout => 15), 'the 550 is a permanent failure'
    or diag $t->error_log;
like $t->error_log, qr/550 5\.1\.1 no such user here/, "error.log quotes exim's reply";
sleep 2;
# counted in exim's main log (a rejection is in its reject log as well)
my $mainlog = do { local $/; open my $fh, '<', "$dir/log/mainlog" or die $!; <$fh> };
my $tries = () = $mainlog =~ /rejected RCPT <nobody-here\@example\.com>/g;
is $tries, 1, 'tried once';

$t->done;
done_testing;
