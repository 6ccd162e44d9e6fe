# A real SMTP server for the tests: t/smtp-server (Debian's python3-aiosmtpd) in a child process,
# each received message a file of its directory, parsed by Python's email package.
#
#   my $relay = SigninSmtp::Relay->new(port => $port, tls => 'starttls', 'cert-dir' => $dir, ...);
#   my @files = $relay->messages;   my ($code, $message) = SigninSmtp::code_of($files[0]);
#
# $SigninSmtp::PY is the python3 that has aiosmtpd (undef when none: a test skips with the reason).
package SigninSmtp;
use strict; use warnings;
use File::Temp ();
use IO::Select;
use POSIX ();
use Time::HiRes qw(time);
use SigninTest;

our $ROOT = $ENV{SIGNIN_ROOT} || '.';
our $PY = SigninTest::python_with('aiosmtpd');

{
    package SigninSmtp::Relay;
    use Time::HiRes qw(time);
    sub new {
        my ($class, %o) = @_;
        my $dir = $o{dir} // File::Temp::tempdir(CLEANUP => 1);
        my @cmd = ($PY, "$ROOT/t/smtp-server", 'serve', '--dir', $dir, '--port', $o{port},
            map { ("--$_", $o{$_}) } grep { defined $o{$_} } qw(tls cert-dir auth rcpt data));
        my $pid = open(my $out, '-|') // die "fork: $!";
        if ($pid == 0) {
            open STDERR, '>>', "$dir/server.err";
            $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
            exec @cmd or POSIX::_exit(127);
        }
        my $self = bless { dir => $dir, pid => $pid, out => $out, owner => $$ }, $class;
        my ($line, $sel, $deadline) = ('', IO::Select->new($out), time + 20);
        while (time < $deadline && $line !~ /\n/) {
            next unless $sel->can_read(0.1);
            sysread($out, $line, 256, length $line) or last;
        }
        die "t/smtp-server did not start: " . `cat $dir/server.err` unless $line =~ /^\d+$/m;
        return $self;
    }
    sub dir { $_[0]{dir} }
    sub messages { my @m = sort glob "$_[0]{dir}/*.eml"; return @m }
    sub events { open my $fh, '<', "$_[0]{dir}/events.log" or return ''; local $/; <$fh> }
    sub stop {
        my ($self) = @_;
        return unless $self->{pid} && $self->{owner} == $$;
        local $?;
        kill 'TERM', $self->{pid};
        waitpid $self->{pid}, 0;
        close $self->{out};
        delete $self->{pid};
    }
    sub DESTROY { $_[0]->stop }
}

# A received message as Python's email package reads it: headers, parts, defects.
sub parse {
    my ($file) = @_;
    my $json = `'$PY' '$ROOT/t/smtp-server' parse '$file'`;
    return $SigninTest::JSON->decode($json);
}

# The code of a received message (its text part), and the message itself.
sub code_of {
    my ($file) = @_;
    my $m = parse($file);
    my ($text) = map { $_->{text} } grep { $_->{content_type} eq 'text/plain' } @{ $m->{parts} };
    my ($code) = ($text // '') =~ /\b([0-9A-Z]{4}-[0-9A-Z]{4})\b/;
    return ($code, $m);
}

# The sign-in link's token of a received message (its text part).
sub token_of {
    my ($file) = @_;
    my $m = parse($file);
    my ($text) = map { $_->{text} } grep { $_->{content_type} eq 'text/plain' } @{ $m->{parts} };
    my ($token) = ($text // '') =~ /#token=([A-Za-z0-9_-]{43})/;
    return $token;
}

1;
