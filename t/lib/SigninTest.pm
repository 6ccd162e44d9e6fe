package SigninTest;
use File::Copy ();

# Test harness for t/*.t: writes an nginx.conf into a fresh prefix, starts the real nginx binary
# with the built module on free loopback ports, speaks HTTP to it, and checks error.log at the end.
# Only Perl core modules: Test::More, HTTP::Tiny, JSON::PP, IO::Socket::INET, File::Temp.
#
#   my $t = SigninTest->new;
#   $t->run(http => q{ server { listen 127.0.0.1:%%PORT%%; location / { return 200; } } });
#   my $r = $t->req(GET => '/');           # {status, headers, content, json}
#   is $r->{status}, 200;
#   $t->done;                              # stops nginx, asserts a clean error.log
#
# error.log is checked for every nginx a test started, also when the file forgets `done`: at
# done_testing (or at the end of a file that never reaches it) and when a SigninTest object is
# destroyed while tests can still be added. `done` checks once; a second call adds nothing.
#
# Placeholders in the config text: %%PORT%% %%PORT2%% %%PORT3%% (free loopback ports), %%PREFIX%%
# (the test's directory), %%MODULE%% (the .so), %%STORE%% (a fresh LMDB directory, or a schema of
# the PostgreSQL that SIGNIN_TEST_PG names), %%ROOT%% (repo).

use strict;
use warnings;
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use IO::Socket::INET;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep time);
use POSIX qw(WNOHANG);
use Fcntl qw(O_WRONLY O_APPEND O_CREAT O_EXCL);
use Scalar::Util qw(weaken refaddr);
use IO::Select;
use Test2::API ();

our $JSON = JSON::PP->new->canonical->allow_nonref;

# ---------------------------------------------------------------- error.log checked for every nginx
# Instances whose nginx was started and whose error.log has not been checked since, by refaddr
# (weak references: an instance that goes away is checked by its DESTROY).
my %UNCHECKED;
my $SEQ = 0;

# Test::More can still add a test while done_testing() runs: the root hub calls its follow-ups
# before it emits the plan. That is where the forgotten checks are made, as ordinary tests that
# count in the plan. (nginx-tests' Test::Nginx adds its check in DESTROY, which only works with
# a fixed plan that reserves room for it: these files end with done_testing, and a file-level
# object is destroyed after the plan was printed.)
Test2::API::test2_add_callback_testing_done(sub {
    my (undef, $hub) = @_;
    return if $hub && defined $hub->skip_reason;    # plan skip_all: nothing may be added
    for my $t (sort { $a->{seq} <=> $b->{seq} } grep { defined } values %UNCHECKED) {
        $t->done(auto => 1);
    }
});

# A file that ends without done_testing (it died, called exit, got a signal) is checked here:
# END blocks run last-compiled first, so this one runs before File::Temp's, which removes the
# prefixes (and with them nginx.pid and error.log), and before Test2's, so a test can still be
# added. Nothing is left running either way.
END {
    local ($?, $@, $!);
    for my $t (sort { $a->{seq} <=> $b->{seq} } grep { defined } values %UNCHECKED) {
        next if $t->{owner} != $$;
        if (Test2::API::test2_is_testing_done()) { $t->stop } else { $t->done(auto => 1) }
    }
}

# A test stopped by a signal (Ctrl-C, prove's TERM, a closed pipe as in `prove -v | head`) would
# leave its nginx running: the signal becomes an exit, so END and DESTROY stop it.
for my $sig (qw(INT TERM HUP PIPE)) {
    next if $SIG{$sig};
    $SIG{$sig} = sub {
        $SIG{PIPE} = 'IGNORE';
        print STDERR "# SIG$sig: stopping nginx\n";
        exit 128 + ($sig eq 'INT' ? 2 : $sig eq 'TERM' ? 15 : $sig eq 'HUP' ? 1 : 13);
    };
}

sub new {
    my ($class, %o) = @_;
    my $self = bless {%o}, $class;
    $self->{owner}  = $$;    # a forked child never stops nginx or checks the log
    $self->{seq}    = ++$SEQ;
    $self->{nginx}  = $ENV{NGINX_BIN} || '/usr/sbin/nginx';
    $self->{module} = $ENV{SIGNIN_MODULE} or die "SIGNIN_MODULE is not set (run through ./build.sh test)\n";
    $self->{admin}  = $ENV{SIGNIN_ADMIN} || '';
    $self->{root}   = $ENV{SIGNIN_ROOT} || '.';
    $self->{prefix} = tempdir('ngx_signin_t.XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{TEST_KEEP});
    chmod 0755, $self->{prefix};
    mkdir "$self->{prefix}/$_" for qw(temp logs);
    $self->{ports} = [map { free_port() } 1 .. 3];
    $self->{http} = HTTP::Tiny->new(timeout => 30, max_redirect => 0, keep_alive => 0);
    $self->sanitizer_setup;    # SIGNIN_SANITIZE_PRELOAD: see "sanitizers" below
    return $self;
}

sub prefix { $_[0]{prefix} }
sub port   { $_[0]{ports}[0] }
sub port2  { $_[0]{ports}[1] }
sub port3  { $_[0]{ports}[2] }
sub store  { "$_[0]{prefix}/store" }
sub origin { 'http://127.0.0.1:' . $_[0]->port }

# A port below Linux's ephemeral range (32768-60999): a port the kernel hands out (LocalPort 0) is
# in that range, where another test's outgoing connections (nginx to a mailer, a provider, an
# upstream) take theirs too, and one of them can hold it when nginx binds it or binds it again
# after a restart. Not one this process gave out before, and not one another test process holds:
# prove -j runs several, and a port free while one test's nginx is stopped for a restart was
# taken by another test's nginx once (CI, 2026-11-29: "bind() ... Address already in use").
# Each port given out is claimed by a file named after it in a shared directory, holding the
# claiming process's pid; a claim whose process is gone is stale and taken over; claims are
# removed when the process ends.
my %GIVEN;
my $CLAIMS = ($ENV{TMPDIR} || '/tmp') . '/ngx_signin_t.ports';
sub claim_port {
    my ($p) = @_;
    mkdir $CLAIMS, 01777 unless -d $CLAIMS;
    chmod 01777, $CLAIMS if -o $CLAIMS;
    my $file = "$CLAIMS/$p";
    for (1 .. 2) {
        if (sysopen my $fh, $file, O_WRONLY | O_CREAT | O_EXCL, 0644) {
            print $fh "$$\n";
            close $fh;
            return 1;
        }
        open my $fh, '<', $file or next;    # removed meanwhile: try again
        my $pid = <$fh> // '';
        close $fh;
        chomp $pid;
        return 0 if $pid =~ /^\d+$/ && (kill(0, $pid) || $!{EPERM});    # held by a live process
        unlink $file;    # stale: its process is gone
    }
    return 0;
}
sub free_port {
    for (1 .. 200) {
        my $p = 20000 + int(rand(12700));
        next if $GIVEN{$p};
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $p, Listen => 1, ReuseAddr => 1) or next;
        close $s;
        claim_port($p) or next;
        $GIVEN{$p} = $$;
        return $p;
    }
    die "no free port below 32768";
}
END {
    for my $p (keys %GIVEN) {
        unlink "$CLAIMS/$p" if $GIVEN{$p} == $$;
    }
}

# SIGNIN_TEST_PG (./build.sh test's second pass, t/pg-server): %%STORE%% is a schema of this test's
# own in that PostgreSQL instead of an LMDB directory (the tests of the pass do not read the store
# as files).
my $PG_SCHEMAS = 0;
sub store_url {
    my ($self) = @_;
    return $self->store unless $ENV{SIGNIN_TEST_PG};
    return $self->{pg_store} if $self->{pg_store};
    my $schema = sprintf 't_%d_%d_%d', $$, $self->{seq}, ++$PG_SCHEMAS;
    system('psql', $ENV{SIGNIN_TEST_PG}, '-qAt', '-c', "CREATE SCHEMA $schema") == 0
        or die "psql could not create the schema $schema\n";
    my $sep = $ENV{SIGNIN_TEST_PG} =~ /\?/ ? '&' : '?';
    return $self->{pg_store} = "$ENV{SIGNIN_TEST_PG}${sep}options=-csearch_path%3D$schema";
}

# signin_secret_key's file: beside an LMDB store, or the one named for a PostgreSQL store.
sub key_file { $_[0]{pg_store} ? "$_[0]{prefix}/signin.key" : $_[0]->store . '.key' }

# Everything the store holds, to search for what must not be stored: the LMDB file, or (PostgreSQL)
# every row of the test's schema as psql prints it (bytea in escape form: text stays text).
sub stored_bytes {
    my ($self) = @_;
    unless ($self->{pg_store}) {
        open my $d, '<:raw', $self->store . '/data.mdb' or die "no data.mdb: $!";
        local $/;
        return <$d>;
    }
    my ($schema) = $self->{pg_store} =~ /search_path%3D(\w+)/;
    my @tables = split /\n/, `psql '$ENV{SIGNIN_TEST_PG}' -qAt -c "SELECT table_name FROM information_schema.tables WHERE table_schema = '$schema'"`;
    my $sql = join ' ', "SET bytea_output = 'escape';", map { "SELECT * FROM $schema.$_;" } @tables;
    return scalar `psql '$ENV{SIGNIN_TEST_PG}' -qAt -c "$sql"`;
}

sub expand {
    my ($self, $text) = @_;
    # a PostgreSQL store needs its key named (every node shares it)
    $text =~ s{(signin_store\s+%%STORE%%\s*;)}{$1 signin_secret_key %%PREFIX%%/signin.key;}
        if $ENV{SIGNIN_TEST_PG} && $text !~ /signin_secret_key/;
    my %v = (
        PORT => $self->port, PORT2 => $self->port2, PORT3 => $self->port3,
        PREFIX => $self->{prefix}, MODULE => $self->{module},
        STORE => ($text =~ /%%STORE%%/ ? $self->store_url : $self->store),
        ROOT => $self->{root},
    );
    $text =~ s/%%(\w+)%%/exists $v{$1} ? $v{$1} : die "unknown placeholder %%$1%%\n"/ge;
    return $text;
}

# The whole nginx.conf around the test's own text: main-level lines in `main`, http-level in `http`.
sub conf_text {
    my ($self, %o) = @_;
    my $workers = $o{workers} // 2;
    my $main = $o{main} // 'thread_pool default threads=4;';
    my $text = <<"EOF";
load_module %%MODULE%%;
worker_processes $workers;
master_process on;
daemon on;
pid %%PREFIX%%/nginx.pid;
error_log %%PREFIX%%/error.log info;
$main
events { worker_connections 1024; }
http {
    access_log %%PREFIX%%/access.log;
    client_body_temp_path %%PREFIX%%/temp/body;
    proxy_temp_path %%PREFIX%%/temp/proxy;
    fastcgi_temp_path %%PREFIX%%/temp/fastcgi;
    uwsgi_temp_path %%PREFIX%%/temp/uwsgi;
    scgi_temp_path %%PREFIX%%/temp/scgi;
$o{http}
}
EOF
    return $self->expand($text);
}

sub write_conf {
    my ($self, %o) = @_;
    my $file = "$self->{prefix}/nginx.conf";
    open my $fh, '>', $file or die "$file: $!";
    print $fh $self->conf_text(%o);
    close $fh;
    return $file;
}

# nginx -t on a config; returns (exit status, output).
sub nginx_t {
    my ($self, %o) = @_;
    my $file = $self->write_conf(%o);
    my $out = `$self->{nginx} -p $self->{prefix} -c $file -t 2>&1`;
    return ($? >> 8, $out);
}

# run(http => ..., main => ..., workers => N, wait_ports => [...]) writes nginx.conf and starts it;
# run(file => $path, ...) starts a configuration the test wrote itself, which must put the pid file
# at <prefix>/nginx.pid and the error log at <prefix>/error.log, as conf_text does.
sub run {
    my ($self, %o) = @_;
    $self->{conf_opts} = \%o;
    my $file = $o{file} // $self->write_conf(%o);
    my $out = `$self->{nginx} -p $self->{prefix} -c $file 2>&1`;
    give_up('nginx starts', $out) if $? != 0;
    $self->started;
    $self->wait_port($_) for @{ $o{wait_ports} || [$self->port] };
    $self->wait_workers($o{workers} // 2);
    # An LMDB store is created by the first worker that opens it, a moment after the worker
    # exists: signin-admin run right after start found no store once (CI, 2026-11-27).
    my $store = $self->store;
    if (!$self->{pg_store} && open my $fh, '<', $file) {
        my $conf = do { local $/; <$fh> };
        if ($conf =~ /signin_store\s+\Q$store\E[\s;]/) {
            $self->wait_for(sub { -e "$store/data.mdb" }, timeout => 10)
                or diag "no $store/data.mdb 10 s after the start";
        }
    }
    return $self;
}

# nginx runs: stop() stops it, and its error.log is checked by done() or automatically.
sub started {
    my ($self) = @_;
    $self->{running} = 1;
    $self->{log_unchecked} = 1;
    weaken($UNCHECKED{ refaddr $self } = $self);
    return $self;
}

sub master_pid {
    my ($self) = @_;
    open my $fh, '<', "$self->{prefix}/nginx.pid" or return;
    my $pid = <$fh>;
    chomp $pid if defined $pid;
    return $pid;
}

sub worker_pids {
    my ($self) = @_;
    my $master = $self->master_pid or return ();
    my @pids;
    for my $d (glob '/proc/[0-9]*') {
        open my $fh, '<', "$d/stat" or next;
        my $stat = <$fh> // next;
        my ($pid, $comm, $state, $ppid) = $stat =~ /^(\d+) \((.*)\) (\S) (\d+)/ or next;
        push @pids, $pid if $ppid == $master;
    }
    my @sorted = sort { $a <=> $b } @pids;
    return @sorted;
}

sub wait_workers {
    my ($self, $n) = @_;
    my @p;
    $self->wait_for(sub { (@p = $self->worker_pids) >= $n }, timeout => 10)
        or diag "only " . scalar(@p) . " workers started";
}

sub wait_port {
    my ($self, $port) = @_;
    $self->wait_for(sub {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 1) or return 0;
        close $s;
        return 1;
    }, timeout => 10) or give_up("nginx listens on $port within 10 s");
}

# Reloads with the same (or a new) configuration and waits until the old workers are gone.
sub reload {
    my ($self, %o) = @_;
    my @old = $self->worker_pids;
    # (a configuration the test wrote itself is reloaded as it stands)
    $self->write_conf(%o ? %o : %{ $self->{conf_opts} }) if %o || !$self->{conf_opts}{file};
    kill 'HUP', $self->master_pid;
    $self->wait_for(sub {
        my %now = map { $_ => 1 } $self->worker_pids;
        return !grep { $now{$_} } @old;
    }, timeout => 20);
    $self->wait_workers($self->{conf_opts}{workers} // 2);
}

sub stop {
    my ($self) = @_;
    return unless $self->{running};
    my $pid = $self->master_pid;
    $self->{running} = 0;
    return unless $pid;
    $self->{stopped_master} = $pid;
    kill 'QUIT', $pid;
    $self->wait_for(sub { !kill(0, $pid) || exited($pid) }, timeout => 10);
    kill 'KILL', $pid if kill 0, $pid;
}

# Processes left of this test's nginx: its master (the one stop() stopped, or the one the pid
# file names) if it has not exited, their children, and anything started with this prefix.
sub leftover_pids {
    my ($self) = @_;
    my %master = map { $_ => 1 } grep { defined } $self->{stopped_master}, $self->master_pid;
    my @left;
    for my $d (glob '/proc/[0-9]*') {
        open my $fh, '<', "$d/stat" or next;
        my $stat = <$fh> // next;
        my ($pid, $state, $ppid) = $stat =~ /^(\d+) \(.*\) (\S) (\d+)/ or next;
        next if $state eq 'Z' || $pid == $$;
        my $cmd = '';
        if (open my $c, '<', "$d/cmdline") { local $/; $cmd = <$c> // ''; $cmd =~ tr/\0/ /; }
        push @left, $pid if $master{$pid} || $master{$ppid} || index($cmd, "-p $self->{prefix} ") >= 0;
    }
    return sort { $a <=> $b } @left;
}

# A daemonized master is reparented to init, which may reap it seconds after it exited:
# a zombie has exited.
sub exited {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 1;
    my $stat = <$fh> // return 1;
    return $stat =~ /^\d+ \(.*\) Z /;
}

sub error_log {
    my ($self) = @_;
    open my $fh, '<', "$self->{prefix}/error.log" or return '';
    local $/;
    return <$fh>;
}

# Stops nginx and asserts that error.log holds no alert, emerg, crash or sanitizer report.
# allow => qr/.../ excuses the lines a test causes on purpose (also set by allow_log).
# Once per start: a second call, or the automatic check after it, adds no test.
sub done {
    my ($self, %o) = @_;
    return if $self->{owner} != $$;
    $self->stop;
    return unless $self->{log_unchecked};
    $self->{log_unchecked} = 0;
    delete $UNCHECKED{ refaddr $self };
    my @allow = grep { defined } $o{allow}, @{ $self->{allow} || [] };
    my $log = $self->error_log;
    my @bad = grep { /\[(alert|emerg|crit)\]|AddressSanitizer|runtime error:|LeakSanitizer|exited on signal/ }
        split /\n/, $log;
    @bad = grep { my $l = $_; !grep { $l =~ $_ } @allow } @bad;
    push @bad, $self->sanitizer_reports;    # see "sanitizers" below
    my $name = 'error.log has no alert, emerg, crit or crash';
    $name .= " (checked for the test: nginx in $self->{prefix} was never done)" if $o{auto};
    ok(!@bad, $name) or diag join "\n", @bad[0 .. ($#bad > 20 ? 20 : $#bad)];
}

# Lines of error.log the test causes on purpose, excused by every later check of this instance.
sub allow_log {
    my ($self, $re) = @_;
    push @{ $self->{allow} }, $re;
    return $self;
}

# An instance that goes away while tests can still be added is checked here (a test that reuses
# a variable for a new nginx, a block-scoped instance); later ones were checked by done_testing.
sub DESTROY {
    my ($self) = @_;
    local ($?, $@, $!);
    return if ($self->{owner} // 0) != $$;
    if ($self->{log_unchecked} && !Test2::API::test2_is_testing_done()) {
        $self->done(auto => 1);
        return;
    }
    $self->stop;
}

# ---------------------------------------------------------------- giving up on a file
# A step the rest of a file needs did not happen (nginx did not start, a build step failed or
# timed out, a tool made no output): that step is one failing test, with what it said, and the
# rest of this file is not run. Only this file fails: BAIL_OUT would end the whole prove run and
# take every other file's result with it.
sub give_up {
    my ($name, $detail) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;    # the failure names the caller's line
    Test::More::fail($name);
    skip_rest($detail);
}

# The same after the file's own test of that step failed: `ok ... or SigninTest::skip_rest($out)`.
sub skip_rest {
    my ($detail) = @_;
    Test::More::diag($detail) if defined $detail && length $detail;
    Test::More::diag('the rest of this file is not run: it needs that step');
    # done_testing's follow-ups still check the error.log of every nginx this file started
    Test::More::done_testing() unless Test::More->builder->has_plan;
    exit 1;
}

# ---------------------------------------------------------------- files shared between processes
# Test processes and their children (a mailer, forked clients) hand each other lines through
# files. A line is appended with one write(2) on an O_APPEND descriptor, so lines of several
# writers never interleave and a line never goes out in pieces. A reader can still run while the
# kernel copies a write in, so read_lines returns only the lines that end in a newline: a last
# line without its newline is still being written and is read whole next time.
sub append_line {
    my ($file, $line) = @_;
    $line .= "\n" unless $line =~ /\n\z/;
    utf8::downgrade($line, 1) or die "append_line: wide character in the line for $file\n";
    sysopen my $fh, $file, O_WRONLY | O_APPEND | O_CREAT, 0644 or die "$file: $!\n";
    my $n = syswrite $fh, $line;
    die "$file: " . (defined $n ? "wrote $n of " . length($line) . ' bytes' : $!) . "\n"
        unless defined $n && $n == length $line;
    close $fh or die "$file: $!\n";
}

sub read_lines {
    my ($file) = @_;
    open my $fh, '<:raw', $file or return ();
    my $text = do { local $/; <$fh> } // '';
    close $fh;
    $text =~ s/[^\n]+\z//;    # the last line has no newline yet: not written whole
    return split /\n/, $text;
}

# ---------------------------------------------------------------- waiting
# Calls $cond until it returns true; returns that value, or undef once `timeout` seconds (5 by
# default) have passed, so the caller's assertion fails with its own message. Polls every 5 ms at
# first, backing off to every 50 ms.
sub wait_for {
    my ($self, $cond, %o) = @_;
    my $deadline = time + ($o{timeout} // 5);
    my $pause = $o{interval} // 0.005;
    while (1) {
        my $v = $cond->();
        return $v if $v;
        return undef if time >= $deadline;
        sleep $pause;
        $pause = 0.05 if ($pause *= 1.5) > 0.05;
    }
}

# Sleeps until an absolute time (Time::HiRes::time): for a test whose subject is a time window,
# measured from when the window began rather than from the end of whatever ran since.
sub sleep_until {
    my ($self, $when) = @_;
    my $d = $when - time;
    sleep $d if $d > 0;
}

# The most two timings of the same work may differ by, in ms: `$ms` for the plain build. The
# sanitized build (SIGNIN_SANITIZE=1) runs the module's code two to three times slower, so the same
# difference of work (an account written, a token written) takes three times as long there: a
# timing test keeps its meaning (nothing that tells an account apart beyond the work's own noise)
# on either build.
sub timing_tolerance_ms {
    my ($ms) = @_;
    return $ENV{SIGNIN_SANITIZE_PRELOAD} ? 3 * $ms : $ms;
}

# ---------------------------------------------------------------- sanitizers (begin)
# SIGNIN_SANITIZE=1 ./build.sh test builds the module with ASan and UBSan and exports
# SIGNIN_SANITIZE_PRELOAD, the sanitizer runtimes for LD_PRELOAD: Debian's nginx is not
# instrumented, and ASan's runtime must be the process's first library. Every nginx this object
# starts (run, nginx_t, reload) gets it through $self->{nginx}; tests that start nginx themselves
# with $ENV{NGINX_BIN} (t/example_conf.t) get it through NGINX_BIN, set here for this process.
#   ASAN_OPTIONS:  reports to <prefix>/sanitizer/report.<pid> (world-writable: workers started by
#                  root run as nobody). detect_leaks=0: LeakSanitizer would judge the whole nginx
#                  at exit, whose cycle and pools an uninstrumented binary never frees on purpose;
#                  the core's leaks are checked by ctest, which runs with leak detection on.
#   UBSAN_OPTIONS: report and go on, with a stack, to the same place.
# Where reports land: ASan reads its options when nginx starts, and workers inherit them. GCC's
# UBSan runtime (libubsan, separate from libasan) reads its options only at its first report,
# and in a worker nginx's setproctitle has already overwritten the environment: UBSan then runs
# on defaults (no stack) and sets the report path it shares with ASan back to stderr, which nginx
# points at error.log. So done() fails on report files and on sanitizer lines in error.log (the
# grep above); a test that dies before done() shows them at exit.
our ($SANITIZE_NGINX, @SANITIZED, %SANITIZE_CHECKED);
sub sanitizer_setup {
    my ($self) = @_;
    my $preload = $ENV{SIGNIN_SANITIZE_PRELOAD} or return;
    $SANITIZE_NGINX //= $self->{nginx};
    my $dir = "$self->{prefix}/sanitizer";
    mkdir $dir;
    chmod 01777, $dir;
    $self->{nginx} = join ' ', 'env', "LD_PRELOAD='$preload'",
        "ASAN_OPTIONS=log_path=$dir/report:detect_leaks=0",
        "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=0:log_path=$dir/report", $SANITIZE_NGINX;
    $ENV{NGINX_BIN} = $self->{nginx};
    push @SANITIZED, $self->{prefix};
}

sub sanitizer_reports {
    my ($self) = @_;
    my $prefix = ref $self ? $self->{prefix} : $self;
    $SANITIZE_CHECKED{$prefix} = 1;
    my @lines;
    for my $file (sort glob "$prefix/sanitizer/report.*") {
        open my $fh, '<', $file or next;
        my @head = grep { defined } map { scalar <$fh> } 1 .. 30;
        chomp @head;
        push @lines, "sanitizer report $file:", @head;
    }
    return @lines;
}

END {    # before File::Temp's END removes the prefixes
    for my $prefix (grep { !$SANITIZE_CHECKED{$_} } @SANITIZED) {
        my @lines = sanitizer_reports($prefix);
        if (open my $fh, '<', "$prefix/error.log") {
            push @lines, grep { /AddressSanitizer|runtime error:|exited on signal/ } <$fh>;
        }
        chomp @lines;
        diag join "\n", "sanitizer reports in $prefix (done() not reached):", @lines if @lines;
    }
}
# ---------------------------------------------------------------- sanitizers (end)

# ---------------------------------------------------------------- HTTP
# req(METHOD, PATH, headers => {...}, json => $data | body => $bytes, port => N)
# A JSON body is sent with content-type application/json unless headers name another.
#   finished => 1   the request says "Connection: close" and req reads until nginx closes the
#                   connection. nginx closes it only when the request's last reference is gone, i.e.
#                   after its background subrequests (the delivery of an email) ended: whatever the
#                   request was going to send has been sent when req returns.
#   conn => $c      on a connection from $t->connection (see there).
# Otherwise HTTP::Tiny answers as soon as the response is read.
sub req {
    my ($self, $method, $path, %o) = @_;
    my %h = %{ $o{headers} || {} };
    my $body = $o{body};
    if (exists $o{json}) {
        $body = ref $o{json} ? $JSON->encode($o{json}) : $o{json};
        $h{'content-type'} //= 'application/json';
    }
    my $port = $o{port} || $self->port;
    my $res;
    if ($o{conn} || $o{finished}) {
        my $c = $o{conn} || SigninTest::Conn->new(port => $port, timeout => $self->{http}->timeout);
        $res = $c->request($method, $path, \%h, $body, close => !$o{conn});
    } else {
        my $url = "http://127.0.0.1:$port$path";
        $res = $self->{http}->request($method, $url, { headers => \%h, (defined $body ? (content => $body) : ()) });
    }
    my $r = { status => $res->{status}, headers => $res->{headers}, content => $res->{content} };
    if (($res->{headers}{'content-type'} // '') =~ m{^application/json} && length($res->{content} // '')) {
        $r->{json} = eval { $JSON->decode($res->{content}) };
    }
    return $r;
}

# One keep-alive connection: $t->req(..., conn => $c). One worker answers every request on it, one
# after another: nginx reads the next request of a connection only once the previous one, its
# background subrequests included, is finished. A request on it after nginx closed it answers 599.
sub connection {
    my ($self, %o) = @_;
    return SigninTest::Conn->new(port => $o{port} || $self->port, timeout => $self->{http}->timeout);
}

# Raw request on one TCP connection (for things HTTP::Tiny will not send); returns the raw response.
sub raw {
    my ($self, $request, %o) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $o{port} || $self->port, Timeout => 10)
        or die "connect: $!";
    print $s $request;
    shutdown $s, 1 if $o{shutdown};
    local $/;
    my $resp = <$s>;
    close $s;
    return $resp // '';
}

# ---------------------------------------------------------------- sign-in helpers
# The dev mailbox as a list of {email, token, purpose, ...} (newest last); location from `mailbox`.
sub mailbox {
    my ($self, %o) = @_;
    my $r = $self->req(GET => $o{path} || '/_dev/mailbox');
    die "mailbox answered $r->{status}: $r->{content}" unless $r->{status} == 200 && $r->{json};
    return @{ $r->{json}{emails} || [] };
}

# The newest email to an address (optionally of a purpose), waiting up to 5 s for the delivery;
# count => N waits for the Nth email to the address.
sub last_email {
    my ($self, $email, %o) = @_;
    my $n = $o{count} // 1;
    return $self->wait_for(sub {
        my @m = grep { $_->{email} eq $email && (!$o{purpose} || $_->{purpose} eq $o{purpose}) } $self->mailbox(%o);
        return @m >= $n ? $m[-1] : undef;
    }, timeout => $o{timeout} // 5);
}

sub emails_to {
    my ($self, $email, %o) = @_;
    return grep { $_->{email} eq $email } $self->mailbox(%o);
}

# "Nothing was sent" with a positive control. An email that did not arrive may just be late, so
# the check is made only once a delivery through the same path, requested after the requests
# that must send nothing, has landed:
#
#   $t->req(POST => '/auth/login', json => {...}, finished => 1);    # must send nothing
#   $t->assert_nothing_sent($email, name => '/login unknown: nothing is sent');
#
# Contract: the requests that must send nothing were answered before this is called; a delivery
# starts at most 22 ms after its answer (t/signin_outbox.t), and the control is requested 50 ms
# later, so an email that should not exist would have reached the mailbox before the control's. The control
# request (finished => 1 too) must be answered 2xx and its email must reach the mailbox within 5 s;
# then the addresses must hold `count` emails. Two tests: the control arrived, and the check.
#   $who       an address, an array of addresses, or a qr// matched against addresses (the
#              control's own email is never counted)
#   count   => emails the addresses hold (default 0)
#   control => { path => '/auth/register', email => ..., json => {...}, headers => {...} }: the
#              request that must send; by default a registration of a fresh control address
#   name    => the check's name; mailbox => { path => ..., port => ... } where emails are read
sub assert_nothing_sent {
    my ($self, $who, %o) = @_;
    my $c = $o{control} || {};
    my $ctl = $c->{email} // sprintf 'control-%d-%d@control.example', $$, ++$self->{controls};
    my $path = $c->{path} // '/auth/register';
    my %mb = %{ $o{mailbox} || {} };
    sleep 0.05;    # a send starts up to 22 ms after its answer: the control's must start later
    my $r = $self->req(POST => $path, json => { email => $ctl, %{ $c->{json} || {} } },
        headers => $c->{headers} || {}, finished => 1, ($c->{port} ? (port => $c->{port}) : ()));
    my $landed = $r->{status} >= 200 && $r->{status} < 300 && $self->last_email($ctl, %mb);
    my $name = $o{name} // 'nothing was sent';
    ok($landed, "$name (control: POST $path for $ctl was delivered)")
        or diag "control answered $r->{status}: $r->{content}";
    my $match = ref $who eq 'Regexp' ? sub { $_[0] =~ $who }
              : ref $who eq 'ARRAY'  ? do { my %w = map { $_ => 1 } @$who; sub { $w{ $_[0] } } }
              :                        sub { $_[0] eq $who };
    my @got = grep { $_->{email} ne $ctl && $match->($_->{email}) } $self->mailbox(%mb);
    is(scalar(@got), $o{count} // 0, $name)
        or diag explain [map { "$_->{email} $_->{purpose}" } @got];
}

# Registers (or logs in) an address and returns the token from the mailbox.
sub request_token {
    my ($self, $email, %o) = @_;
    my $path = $o{path} || '/auth/' . ($o{login} ? 'login' : 'register');
    my $before = () = $self->emails_to($email);
    my $r = $self->req(POST => $path, json => { email => $email, ($o{group} ? (group => $o{group}) : ()) });
    die "token request answered $r->{status}: $r->{content}" unless $r->{status} == 202;
    my $m = $self->last_email($email, count => $before + 1) or die "no email reached $email";
    return $m->{token};
}

# A fresh signed-in cookie session for an address: returns (cookie header value, user json).
sub sign_in {
    my ($self, $email, %o) = @_;
    my $token = $self->request_token($email, %o);
    my $r = $self->req(POST => '/auth/session', json => { token => $token }, headers => { origin => $self->origin });
    die "session answered $r->{status}: $r->{content}" unless $r->{status} == 200;
    my $cookie = set_cookie_pair($r);
    return wantarray ? ($cookie, $r->{json}) : $cookie;
}

# A cookie session whose TOTP enrollment (needs signin_mfa on, and oathtool) counts as a passed
# second factor: returns (cookie, user json, recovery codes). %o as sign_in's.
sub mfa_enrolled {
    my ($self, $email, %o) = @_;
    my ($cookie, $user) = $self->sign_in($email, %o);
    my $h = { origin => $self->origin, cookie => $cookie };
    my $r = $self->req(POST => '/auth/mfa/totp/setup', json => {}, headers => $h);
    die "setup: $r->{status} $r->{content}" unless $r->{status} == 200;
    my $secret = $r->{json}{secret};
    totp_settle();
    $r = $self->req(POST => '/auth/mfa/totp/confirm', json => { code => totp_code($secret) }, headers => $h);
    die "confirm: $r->{status} $r->{content}" unless $r->{status} == 200;
    return ($cookie, $user, $r->{json}{recovery_codes});
}

sub bearer {
    my ($self, $email, %o) = @_;
    my $token = $self->request_token($email, %o);
    my $r = $self->req(POST => '/auth/token', json => { token => $token });
    die "token answered $r->{status}: $r->{content}" unless $r->{status} == 200;
    return $r->{json}{access_token};
}

# "name=value" of the response's set-cookie header.
sub set_cookie_pair {
    my ($r) = @_;
    my $sc = $r->{headers}{'set-cookie'} // return undef;
    $sc = $sc->[0] if ref $sc;
    my ($pair) = split /;/, $sc;
    return $pair;
}

# The http-level text of the usual sign-in server: the API at /auth/, the dev mailbox as delivery
# (and at /_dev/mailbox), registration on. `extra`: more http-level directives; `locations`: more
# locations in that server; `servers`: more server blocks; `auth`: more directives in /auth/
sub signin_http {
    my ($self, %o) = @_;
    my ($extra, $locations, $servers, $auth) = map { $_ // '' } @o{qw(extra locations servers auth)};
    return qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    $extra
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; $auth }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
        $locations
    }
    $servers
};
}

# The same with passwords on (t/passwords_*.t), `extra` directives at http level.
sub password_http {
    my ($self, $extra) = @_;
    return $self->signin_http(extra => "signin_passwords on;\n" . ($extra // ''));
}

# POST /auth/password/<what> with {email, password}; extra headers in %h.
sub password_req {
    my ($self, $what, $email, $password, %h) = @_;
    return $self->req(POST => "/auth/password/$what", json => { email => $email, password => $password },
        headers => \%h);
}

# Registers with a password and exchanges the Registration token: the account exists.
sub register_password {
    my ($self, $email, $password) = @_;
    my $before = () = $self->emails_to($email);
    my $r = $self->password_req(register => $email, $password);
    die "password register answered $r->{status}: $r->{content}" unless $r->{status} == 202;
    my $m = $self->last_email($email, count => $before + 1) or die "no email reached $email";
    die "expected Registration, got $m->{purpose}" unless $m->{purpose} eq 'Registration';
    $r = $self->req(POST => '/auth/token', json => { token => $m->{token} });
    die "exchange answered $r->{status}: $r->{content}" unless $r->{status} == 200;
    return $r->{json}{access_token};
}

# The stored PHC string of an account (signin-admin password-hash).
sub password_hash {
    my ($self, $email) = @_;
    my ($rc, $out) = $self->admin('password-hash', $email);
    chomp $out;
    return $rc == 0 ? $out : undef;
}

# Runs the signin-admin tool on this test's store; returns (exit status, output).
# Runs a browser walk (t/browser/SCRIPT with ARGS; it prints one JSON line {checks, screenshots})
# and makes each of its observations a test: a skipped one is a skip, at least `min` of them,
# every screenshot written (and copied to SIGNIN_SHOTS when set).
sub browser_walk {
    my ($self, $script, $min, @args) = @_;
    my $root = $ENV{SIGNIN_ROOT} || '.';
    my $cmd = join ' ', 'cd', quotemeta("$root/t"), '&&', 'node', quotemeta("browser/$script"), map { quotemeta } @args;
    my $out = `$cmd 2>&1`;
    Test::More::is($? >> 8, 0, "the browser walk $script ran") or Test::More::diag($out);
    my ($line) = grep { /^\{"checks"/ } split /\n/, $out;
    my $seen = eval { $JSON->decode($line // '') } || {};
    Test::More::ok(@{ $seen->{checks} || [] } >= $min, "$script reported its observations") or Test::More::diag($out);
    for my $c (@{ $seen->{checks} || [] }) {
        SKIP: {
            Test::More::skip($c->{name}, 1) if $c->{skip};
            Test::More::ok($c->{ok}, $c->{name}) or Test::More::diag($c->{detail});
        }
    }
    for my $png (@{ $seen->{screenshots} || [] }) {
        Test::More::ok(-s $png, "screenshot $png");
        File::Copy::copy($png, $ENV{SIGNIN_SHOTS}) if $ENV{SIGNIN_SHOTS};
    }
}

# signin-admin with --json (what tests parse); admin_text without it (the tables people read).
sub admin {
    my ($self, @args) = @_;
    return $self->admin_text('--json', @args);
}

sub admin_text {
    my ($self, @args) = @_;
    # a PostgreSQL store has no key file beside it: the one the test's nginx uses is named
    if ($self->{pg_store} && !grep { $_ eq '--key' } @args) {
        my $key = "$self->{prefix}/signin.key";
        if (grep { $_ eq 'invite' || $_ eq 'outbox' } @args) { push @args, '--key', $key }
        elsif (@args >= 2 && $args[-2] eq 'key' && $args[-1] eq 'rotate') { push @args, $key }
    }
    my $cmd = join ' ', map { quotemeta } $self->{admin}, '--store', $self->{pg_store} // $self->store, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}


# ---------------------------------------------------------------- optional tools
# What a test needs beyond Perl and nginx, so that a missing tool skips that test (or part of it)
# with the reason instead of failing or stopping the run.

# The path of a command found in $PATH (or given with a slash and executable), or undef.
# Second factors, made by another implementation than the module's: Debian's oathtool.
# totp_code($secret_b32, $offset): the TOTP code of the secret at now + offset seconds.
sub totp_code {
    my ($secret, $offset) = @_;
    my $oathtool = which('oathtool') or die "no oathtool\n";
    my $at = int(time) + ($offset // 0);
    my $c = `$oathtool --totp -b -N \@$at $secret 2>&1`;
    chomp $c;
    die "oathtool: $c" unless $c =~ /^\d{6}$/;
    return $c;
}
# Waits until at least `margin` seconds (4) remain in the current 30 s step, so that "now" cannot
# move to the next step between making a code and sending it.
sub totp_settle {
    my ($margin) = @_;
    my $left = 30 - int(time) % 30;
    sleep $left + 1 if $left < ($margin // 4);
}

sub which {
    my ($cmd) = @_;
    return -x $cmd ? $cmd : undef if $cmd =~ m{/};
    for my $d (split /:/, $ENV{PATH} // '') {
        return "$d/$cmd" if length $d && -f "$d/$cmd" && -x _;
    }
    return undef;
}

# undef when node and every npm package named (in t/node_modules) are installed, else why not.
# (Only their presence: an installed package that does not work fails its test, as it should.)
sub missing_node_packages {
    my (@pkgs) = @_;
    my $root = $ENV{SIGNIN_ROOT} || '.';
    which('node') or return 'node is not installed';
    for my $p (@pkgs) {
        -f "$root/t/node_modules/$p/package.json"
            or return "npm package $p is not installed (build.sh test runs npm ci in t/)";
    }
    return undef;
}

# A python3 that can import the module (Debian's /usr/bin/python3 first: python3-argon2 and such
# are Debian packages), or undef.
sub python_with {
    my ($module) = @_;
    for my $py (grep { defined } '/usr/bin/python3', which('python3')) {
        next unless -x $py;
        system("'$py' -c 'import $module' >/dev/null 2>&1");
        return $py if $? == 0;
    }
    return undef;
}

# ---------------------------------------------------------------- a small HTTP/1.1 client
# For what HTTP::Tiny does not offer: reading until nginx closes the connection, and knowing that
# a keep-alive connection was not replaced by a new one. Answers look like HTTP::Tiny's: status,
# reason, headers (lower-case names; a repeated header is an array), content; 599 on an error.
package SigninTest::Conn;

use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time);

sub new {
    my ($class, %o) = @_;
    return bless { port => $o{port}, timeout => $o{timeout} // 30, buf => '' }, $class;
}

sub request {
    my ($self, $method, $path, $headers, $body, %o) = @_;
    my $res = eval { $self->_request($method, $path, $headers, $body, %o) };
    return $res if $res;
    $self->{closed} = 1;
    return { status => 599, reason => 'Internal Exception', headers => {}, content => $@ };
}

sub _request {
    my ($self, $method, $path, $headers, $body, %o) = @_;
    die "the connection was closed: a new one could reach another worker\n" if $self->{closed};
    local $SIG{PIPE} = 'IGNORE';    # nginx may close early (a 413): the answer is still read
    $self->{deadline} = time + $self->{timeout};
    $self->{sock} //= IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port},
        Timeout => $self->{timeout}) || die "connect to 127.0.0.1:$self->{port}: $!\n";
    my %h = map { lc($_) => $headers->{$_} } keys %$headers;
    $h{host} //= "127.0.0.1:$self->{port}";
    $h{'user-agent'} //= 'SigninTest';
    $h{connection} = 'close' if $o{close};
    if (defined $body) {
        utf8::downgrade($body, 1) or die "Wide character in the request body\n";
        $h{'content-length'} //= length $body;
    }
    my $out = "$method $path HTTP/1.1\r\n" . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n"
        . ($body // '');
    while (length $out) {
        my $n = syswrite($self->{sock}, $out) // die "write: $!\n";
        substr($out, 0, $n) = '';
    }

    $self->_fill_until(sub { index($self->{buf}, "\r\n\r\n") >= 0 }) or die "no response head\n";
    my $end = index($self->{buf}, "\r\n\r\n");
    my ($status_line, @lines) = split /\r\n/, substr($self->{buf}, 0, $end);
    substr($self->{buf}, 0, $end + 4) = '';
    my ($status, $reason) = $status_line =~ m{^HTTP/1\.[01] (\d\d\d) ?(.*)$} or die "bad status line: $status_line\n";
    my %rh;
    for (@lines) {
        my ($k, $v) = /^([^:]+):[ \t]*(.*?)[ \t]*$/ or next;
        $k = lc $k;
        $rh{$k} = exists $rh{$k} ? [ref $rh{$k} ? @{ $rh{$k} } : $rh{$k}, $v] : $v;
    }
    my $chunked = ($rh{'transfer-encoding'} // '') =~ /chunked/i;
    my $length = $rh{'content-length'};
    my $content = '';
    if ($o{close}) {
        # everything up to the end: nginx has finished the request
        $self->_fill_until(sub { 0 }, eof_ok => 1);
        $content = $self->{buf};
        $self->{buf} = '';
        $self->{closed} = 1;
        if ($method eq 'HEAD' || $status == 204 || $status == 304) { $content = '' }
        elsif ($chunked) { $content = dechunk($content) }
        elsif (defined $length && !ref $length) { $content = substr($content, 0, $length) }
    } elsif ($method eq 'HEAD' || $status == 204 || $status == 304) {
    } elsif ($chunked) {
        while (1) {
            $self->_fill_until(sub { $self->{buf} =~ /\r\n/ }) or die "truncated chunk\n";
            $self->{buf} =~ s/^([0-9a-fA-F]+)[^\r]*\r\n// or die "bad chunk size\n";
            my $size = hex $1;
            if (!$size) {
                $self->_fill_until(sub { $self->{buf} =~ /^(?:[^\r]+\r\n)*\r\n/ }) or die "truncated trailer\n";
                $self->{buf} =~ s/^(?:[^\r]+\r\n)*\r\n//;
                last;
            }
            $self->_fill_until(sub { length($self->{buf}) >= $size + 2 }) or die "truncated chunk\n";
            $content .= substr($self->{buf}, 0, $size);
            substr($self->{buf}, 0, $size + 2) = '';
        }
    } elsif (defined $length) {
        $self->_fill_until(sub { length($self->{buf}) >= $length }) or die "truncated body\n";
        $content = substr($self->{buf}, 0, $length);
        substr($self->{buf}, 0, $length) = '';
    } else {
        $self->_fill_until(sub { 0 }, eof_ok => 1);
        ($content, $self->{buf}) = ($self->{buf}, '');
        $self->{closed} = 1;
    }
    $self->{closed} = 1 if ($rh{connection} // '') =~ /close/i;
    if ($self->{closed} && $self->{sock}) { close $self->{sock}; delete $self->{sock} }
    return { status => $status, reason => $reason, headers => \%rh, content => $content };
}

# Reads until $done->() is true (1), or until the peer closes the connection (1 with eof_ok,
# else 0); dies when the deadline passes.
sub _fill_until {
    my ($self, $done, %o) = @_;
    my $sel = IO::Select->new($self->{sock});
    while (!$done->()) {
        my $left = $self->{deadline} - time;
        die "timeout after $self->{timeout} s\n" if $left <= 0;
        next unless $sel->can_read($left);
        my $n = sysread($self->{sock}, $self->{buf}, 65536, length $self->{buf});
        die "read: $!\n" unless defined $n;
        return $o{eof_ok} ? 1 : 0 if $n == 0;
    }
    return 1;
}

sub dechunk {
    my ($data) = @_;
    my $out = '';
    while ($data =~ s/^([0-9a-fA-F]+)[^\r]*\r\n//) {
        my $size = hex $1 or last;
        $out .= substr($data, 0, $size);
        substr($data, 0, $size + 2) = '';
    }
    return $out;
}

# ---------------------------------------------------------------- a mailer over HTTP
# A stand-in for a mail API behind the signin_delivery location's proxy_pass, on a loopback port,
# in a child process: each request's body (the delivery JSON) is appended to a file as one whole
# line (append_line), and answered `delay` seconds later with the next status of `statuses` (the
# last one repeats).
# Requests are answered concurrently (one select loop). Stopped by stop() or when the object goes.
#   my $mailer = SigninTest::Mailer->new(port => $t->port2, delay => 0.3, statuses => [503, 204]);
#   my @emails = $mailer->emails;    # [{email, token, purpose, ...}], in arrival order
package SigninTest::Mailer;

use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use POSIX ();

sub new {
    my ($class, %o) = @_;
    my $self = bless { port => $o{port}, delay => $o{delay} // 0, statuses => $o{statuses} || [204],
        file => $o{file} // File::Temp::tempdir(CLEANUP => 1) . '/mailer.log', owner => $$ }, $class;
    open my $touch, '>>', $self->{file} or die "$self->{file}: $!";
    close $touch;
    my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $self->{port}, Listen => 128,
        ReuseAddr => 1) or die "mailer: listen on $self->{port}: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
        $self->serve($listen);
        POSIX::_exit(0);
    }
    close $listen;
    $self->{pid} = $pid;
    return $self;
}

sub serve {
    my ($self, $listen) = @_;
    my $sel = IO::Select->new($listen);
    my (%buf, %due);
    my $n = 0;
    my $deadline = time + 600;    # bounded: a mailer outlives no test
    while (time < $deadline) {
        my @ready = $sel->can_read(0.01);
        for my $s (@ready) {
            if ($s == $listen) {
                my $c = $listen->accept or next;
                $sel->add($c);
                $buf{$c} = '';
                next;
            }
            my $got = sysread($s, $buf{$s}, 65536, length $buf{$s});
            if (!$got) { $sel->remove($s); delete $buf{$s}; delete $due{$s}; close $s; next; }
            next if $due{$s};
            my ($head, $body) = $buf{$s} =~ /^(.*?\r\n\r\n)(.*)$/s or next;
            my ($len) = $head =~ /^content-length:\s*(\d+)/mi;
            next if length($body) < ($len // 0);
            SigninTest::append_line($self->{file}, substr($body, 0, $len // 0) . "\n");
            my @st = @{ $self->{statuses} };
            $due{$s} = [time + $self->{delay}, $st[$n < @st ? $n : -1], $s];
            $n++;
        }
        for my $k (keys %due) {
            my ($at, $status, $s) = @{ $due{$k} };
            next if time < $at;
            syswrite $s, "HTTP/1.1 $status X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            $sel->remove($s);
            delete $due{$k};
            delete $buf{$s};
            close $s;
        }
    }
}

# Only whole lines: the mailer may be writing the next one (see append_line).
sub emails {
    my ($self) = @_;
    return map { $SigninTest::JSON->decode($_) } grep { /\S/ } SigninTest::read_lines($self->{file});
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    delete $self->{pid};
}

sub DESTROY { $_[0]->stop }


# ---------------------------------------------------------------- an OpenID provider
# t/tools/oidc_provider.mjs (the npm oidc-provider) on a loopback port, for signin_provider:
#   my $idp = SigninTest::Provider->new(port => $t->port2, keys => "$dir/keys.json",
#       redirect => ["http://127.0.0.1:PORT/auth/providers/idp/callback"], client_id => 'c', secret => 's');
#   $idp->control(next => {sub => 'x', email => 'x@example.com'});   # POST /_test/next
#   $idp->stop;                                                      # also when it goes away
package SigninTest::Provider;

use strict;
use warnings;
use HTTP::Tiny;
use Time::HiRes qw(time sleep);

sub new {
    my ($class, %o) = @_;
    my $root = $ENV{SIGNIN_ROOT} || '.';
    my @cmd = ('node', "$root/t/tools/oidc_provider.mjs", '--port', $o{port}, '--keys', $o{keys},
        '--client-id', $o{client_id} // 'nginx', '--client-secret', $o{secret} // 'the-secret',
        (map { ('--redirect-uri', $_) } @{ $o{redirect} }), '--alg', $o{alg} // 'RS256', '--auth', $o{auth} // 'post',
        ($o{interactive} ? ('--interactive') : ()),
        ($o{client_id2} ? ('--client-id2', $o{client_id2}, '--client-secret2', $o{secret2}) : ()));
    my $log = $o{log} // File::Temp::tempdir(CLEANUP => 1) . '/provider.log';
    my $self = bless { %o, owner => $$, issuer => "http://127.0.0.1:$o{port}", log_file => $log,
        http => HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 0) }, $class;
    my $pid = open(my $out, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', $log or die "$log: $!";
        $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
        exec @cmd or POSIX::_exit(127);
    }
    $self->{pid} = $pid;
    $self->{out} = $out;
    my $line = '';
    my $deadline = time + 30;    # bounded: node and its packages load in a second or two
    my $sel = IO::Select->new($out);
    while (time < $deadline && $line !~ /\n/) {
        next unless $sel->can_read(0.1);
        my $got = sysread($out, $line, 256, length $line) or last;
    }
    die "the OpenID provider did not start (see $log):\n" . (do { local $/; open my $fh, '<', $log; <$fh> } // '')
        unless $line =~ /^ready /;
    return $self;
}

sub issuer { $_[0]{issuer} }

# POST /_test/WHAT with a JSON body; dies unless the provider takes it.
sub control {
    my ($self, $what, $body) = @_;
    my $r = $self->{http}->request(POST => "$self->{issuer}/_test/$what",
        { headers => { 'content-type' => 'application/json' }, content => $SigninTest::JSON->encode($body // {}) });
    die "provider /_test/$what answered $r->{status}: $r->{content}" unless $r->{success};
    return $r->{content} ? eval { $SigninTest::JSON->decode($r->{content}) } : undef;
}

# The paths the provider was asked for since the last clear (GET /_test/log), as "METHOD path".
sub requests {
    my ($self) = @_;
    my $r = $self->{http}->get("$self->{issuer}/_test/log");
    return map { "$_->{method} $_->{path}" } @{ $SigninTest::JSON->decode($r->{content}) };
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    local $?;    # closing the pipe sets $?: at exit it would become the test's status
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    close $self->{out};
    delete $self->{pid};
}

sub DESTROY { $_[0]->stop }

1;
