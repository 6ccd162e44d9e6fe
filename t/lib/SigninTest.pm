package SigninTest;

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
# Placeholders in the config text: %%PORT%% %%PORT2%% %%PORT3%% (free loopback ports), %%PREFIX%%
# (the test's directory), %%MODULE%% (the .so), %%STORE%% (a fresh LMDB directory), %%ROOT%% (repo).

use strict;
use warnings;
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use IO::Socket::INET;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep time);
use POSIX qw(WNOHANG);

our $JSON = JSON::PP->new->canonical->allow_nonref;

sub new {
    my ($class, %o) = @_;
    my $self = bless {%o}, $class;
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

sub free_port {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1, ReuseAddr => 1)
        or die "no free port: $!";
    my $p = $s->sockport;
    close $s;
    return $p;
}

sub expand {
    my ($self, $text) = @_;
    my %v = (
        PORT => $self->port, PORT2 => $self->port2, PORT3 => $self->port3,
        PREFIX => $self->{prefix}, MODULE => $self->{module}, STORE => $self->store,
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

sub run {
    my ($self, %o) = @_;
    $self->{conf_opts} = \%o;
    my $file = $self->write_conf(%o);
    my $out = `$self->{nginx} -p $self->{prefix} -c $file 2>&1`;
    if ($? != 0) {
        BAIL_OUT("nginx did not start: $out");
    }
    $self->{running} = 1;
    $self->wait_port($_) for @{ $o{wait_ports} || [$self->port] };
    $self->wait_workers($o{workers} // 2);
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
    for (1 .. 200) {
        @p = $self->worker_pids;
        return if @p >= $n;
        sleep 0.05;
    }
    diag "only " . scalar(@p) . " workers started";
}

sub wait_port {
    my ($self, $port) = @_;
    for (1 .. 200) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 1);
        if ($s) { close $s; return 1 }
        sleep 0.05;
    }
    BAIL_OUT("nginx is not listening on $port");
}

# Reloads with the same (or a new) configuration and waits until the old workers are gone.
sub reload {
    my ($self, %o) = @_;
    my @old = $self->worker_pids;
    $self->write_conf(%o ? %o : %{ $self->{conf_opts} });
    kill 'HUP', $self->master_pid;
    for (1 .. 400) {
        my %now = map { $_ => 1 } $self->worker_pids;
        last unless grep { $now{$_} } @old;
        sleep 0.05;
    }
    $self->wait_workers($self->{conf_opts}{workers} // 2);
}

sub stop {
    my ($self) = @_;
    return unless $self->{running};
    my $pid = $self->master_pid;
    $self->{running} = 0;
    return unless $pid;
    kill 'QUIT', $pid;
    for (1 .. 200) {
        last unless kill 0, $pid;
        last if exited($pid);
        sleep 0.05;
    }
    kill 'KILL', $pid if kill 0, $pid;
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
sub done {
    my ($self) = @_;
    $self->stop;
    my $log = $self->error_log;
    my @bad = grep { /\[(alert|emerg|crit)\]|AddressSanitizer|runtime error:|LeakSanitizer|exited on signal/ }
        split /\n/, $log;
    push @bad, $self->sanitizer_reports;    # see "sanitizers" below
    ok(!@bad, 'error.log has no alert, emerg, crit or crash') or diag join "\n", @bad[0 .. ($#bad > 20 ? 20 : $#bad)];
}

sub DESTROY { $_[0]->stop }

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
sub req {
    my ($self, $method, $path, %o) = @_;
    my %h = %{ $o{headers} || {} };
    my $body = $o{body};
    if (exists $o{json}) {
        $body = ref $o{json} ? $JSON->encode($o{json}) : $o{json};
        $h{'content-type'} //= 'application/json';
    }
    my $port = $o{port} || $self->port;
    my $url = "http://127.0.0.1:$port$path";
    my $res = $self->{http}->request($method, $url, { headers => \%h, (defined $body ? (content => $body) : ()) });
    my $r = { status => $res->{status}, headers => $res->{headers}, content => $res->{content} };
    if (($res->{headers}{'content-type'} // '') =~ m{^application/json} && length($res->{content} // '')) {
        $r->{json} = eval { $JSON->decode($res->{content}) };
    }
    return $r;
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

# The newest email to an address (optionally of a purpose), waiting a little for the delivery.
sub last_email {
    my ($self, $email, %o) = @_;
    for (1 .. ($o{tries} // 50)) {
        my @m = grep { $_->{email} eq $email && (!$o{purpose} || $_->{purpose} eq $o{purpose}) } $self->mailbox(%o);
        my $n = $o{count} // 1;
        return $m[-1] if @m >= $n;
        sleep 0.05;
    }
    return undef;
}

sub emails_to {
    my ($self, $email, %o) = @_;
    return grep { $_->{email} eq $email } $self->mailbox(%o);
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
# locations in that server; `servers`: more server blocks.
sub signin_http {
    my ($self, %o) = @_;
    my ($extra, $locations, $servers) = map { $_ // '' } @o{qw(extra locations servers)};
    return qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_delivery /_signin/deliver;
    $extra
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
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
sub admin {
    my ($self, @args) = @_;
    my $cmd = join ' ', map { quotemeta } $self->{admin}, '--store', $self->store, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

1;
