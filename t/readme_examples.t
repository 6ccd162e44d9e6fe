# Every nginx configuration the README and docs/ show is a file under examples/, and every such
# file passes nginx -t with the built module and without a warning (issue #23), so neither the
# documents nor the examples can drift:
#
#  1. each ```nginx block of README.md and of docs/*.md, the API versions example too (which
#     t/versions_readme.t also serves requests with), follows a line
#     <!-- example: examples/NAME.conf --> and is byte for byte that file;
#  2. every directive of the module's ngx_command_t tables (src/ngx/*/*.cpp) has a section in
#     docs/directives.md (issue #35): a heading "### NAME", then its Syntax, Default and Context
#     lines, the context being what its flags allow; every variable the module registers is in
#     docs/variables.md, and every path of docs/signin-api.yaml is named by a page of docs/;
#  3. each examples/*.conf runs through nginx -t. Its header says where it goes:
#     "# context: nginx.conf" (a whole file), "main", "http" or "server" (a fragment, wrapped by
#     SigninTest's minimal nginx.conf: load_module, pid, error_log, temporary paths).
#
# The rewriting rules, all of them:
#  - load_module modules/ngx_http_signin_module.so  -> the module under test (whole files);
#  - a whole file gets, inside http { }, the access log and temporary paths of the test's prefix
#    (never the system's /var/log/nginx or /var/lib/nginx), and -e / -g "pid" put its error log
#    and pid file there;
#  - /var/lib/nginx-signin/ -> the prefix (the store and its key); client_secret_file=,
#    signin_smtp_auth_file and signin_events_secret_file paths, and signin_oidc_client's
#    secret_file= -> a file in the prefix holding a made-up secret (of the form each wants);
#    signin_oidc_signing_key_file -> an RSA key made here by openssl; every
#    ssl_certificate(_key) -> a self-signed P-256 certificate made here; a missing proxy_ssl_trusted_certificate file -> that certificate;
#  - a signin_store postgresql:// URI's host and port -> 127.0.0.1:1 (nginx -t asks the database
#    for its max_connections: refused at once, which nginx -t notes without a warning);
#  - a proxy_pass host that is neither an address nor an upstream of the file gets an
#    "upstream HOST { server 127.0.0.1:PORT; }" (nginx -t would ask DNS for it);
#  - fragments run with examples/thread-pool.conf in the main context, and an http or server
#    fragment gets the lines a site needs that it does not set itself: signin_store (the
#    prefix), signin_origin https://app.example.com, signin_limits, and signin_email off when it
#    has neither signin_delivery nor signin_smtp;
#  - on nginx 1.25.1 and later "listen ... http2;" becomes "listen ...;" and "http2 on;", as the
#    README says to write it there.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; return scalar <$fh> }

# ---------------------------------------------------------------- 1. the documents' blocks are files
my @documents = ('README.md', map { s{^\Q$root\E/}{}r } sort glob "$root/docs/*.md");
ok scalar(@documents) >= 5, 'the documents: ' . join(', ', @documents);
my %shown;
for my $document (@documents) {
    my @lines = split /(?<=\n)/, slurp("$root/$document");
    for (my $i = 0; $i < @lines; $i++) {
        if ($lines[$i] =~ /^<!-- example: (\S+) -->/) {
            my $file = $1;
            like $lines[$i + 1] // '', qr/^```nginx$/, "$document line @{[$i + 1]}: the marker of $file is followed by an nginx block";
        }
        next unless $lines[$i] =~ /^```nginx\s*$/;
        my $start = $i + 1;
        my $block = '';
        $block .= $lines[$i] while ++$i < @lines && $lines[$i] !~ /^```\s*$/;
        my ($file) = $start >= 2 ? $lines[$start - 2] =~ /^<!-- example: (\S+) -->$/ : ();
        ok defined $file, "$document line $start: the nginx block has an <!-- example: FILE --> line before it" or next;
        ok -f "$root/$file", "$document line $start: $file exists" or next;
        $shown{$file}++;
        my $text = slurp("$root/$file");
        ok $text eq $block, "$document line $start: the block is $file, byte for byte" or diag first_difference($block, $text);
    }
}
ok scalar(keys %shown) >= 5, 'the documents show their examples (' . join(', ', sort keys %shown) . ')';

sub first_difference {
    my ($a, $b) = @_;
    my @a = split /\n/, $a, -1;
    my @b = split /\n/, $b, -1;
    for my $n (0 .. ($#a > $#b ? $#a : $#b)) {
        next if defined $a[$n] && defined $b[$n] && $a[$n] eq $b[$n];
        return sprintf "line %d of the block: document %s, file %s", $n + 1,
            defined $a[$n] ? "'$a[$n]'" : '(none)', defined $b[$n] ? "'$b[$n]'" : '(none)';
    }
    return 'the same lines';
}

# ---------------------------------------------------------------- 2. every directive in docs/directives.md
my $reference = -f "$root/docs/directives.md" ? slurp("$root/docs/directives.md") : '';
ok length $reference, 'docs/directives.md exists';
my %context_name = (NGX_HTTP_MAIN_CONF => 'http', NGX_HTTP_SRV_CONF => 'server', NGX_HTTP_LOC_CONF => 'location',
                    'apiv::kGroupConf' => 'api_versions', 'apiv::kVersionConf' => 'version');
my @order = qw(NGX_HTTP_MAIN_CONF NGX_HTTP_SRV_CONF NGX_HTTP_LOC_CONF apiv::kGroupConf apiv::kVersionConf);
my $directives = 0;
for my $src (glob "$root/src/ngx/*/*.cpp") {
    my $code = slurp($src);
    while ($code =~ /\{ngx_string\("(\w+)"\),\s*((?:[\w:]+\s*\|\s*)*[\w:]+),/g) {
        my ($name, $flags) = ($1, $2);
        next unless $flags =~ /NGX_CONF_|kGroupConf|kVersionConf/;
        $directives++;
        my %has = map { $_ => 1 } split /\s*\|\s*/, $flags;
        my $context = join ', ', map { $context_name{$_} } grep { $has{$_} } @order;
        my ($section) = $reference =~ /^### \Q$name\E\n\n(- \*\*Syntax:\*\* .*?\n- \*\*Default:\*\* .*?\n- \*\*Context:\*\* .*?)\n/m;
        ok defined $section, "docs/directives.md has a section for $name with its Syntax, Default and Context" or next;
        my ($syntax) = $section =~ /^- \*\*Syntax:\*\* (.*)$/m;
        like $syntax, qr/^`\Q$name\E[ `;]/, "... whose syntax starts with $name";
        my ($documented) = $section =~ /^- \*\*Context:\*\* (.*)$/m;
        is $documented, $context, "... and whose context is what its flags allow ($flags)";
    }
}
ok $directives > 60, "the command tables were read ($directives directives)";

# ---------------------------------------------------------------- 2b. every variable and endpoint in docs/
# Every variable the module registers is in docs/variables.md, and every path of the sign-in API's
# OpenAPI document ({name} written NAME) is named by a page of docs/.
my $variables_doc = -f "$root/docs/variables.md" ? slurp("$root/docs/variables.md") : '';
my $variables = 0;
for my $src (glob "$root/src/ngx/*/*.cpp") {
    my $code = slurp($src);
    my @names = $code =~ /\{ngx_string\("(\w+)"\),\s*nullptr,\s*get_variable\b/g;
    push @names, $1 =~ /ngx_string\("(\w+)"\)/g while $code =~ /static ngx_str_t names\[\] = \{([^;]*)\};/g;
    for my $name (@names) {
        $variables++;
        like $variables_doc, qr/`\$\Q$name\E`/, "docs/variables.md has \$$name";
    }
}
ok $variables >= 10, "the variables were read ($variables)";
my $all_docs = join "\n", map { slurp($_) } grep { !/signin-api\.yaml$/ } glob "$root/docs/*.md";
my @paths = slurp("$root/docs/signin-api.yaml") =~ m{^  (/\S*):$}mg;
ok @paths > 30, 'the OpenAPI document lists its paths (' . scalar(@paths) . ')';
for my $path (@paths) {
    (my $shown = $path) =~ s/\{name\}/NAME/g;
    ok index($all_docs, $shown) >= 0, "docs/ names the endpoint $path";
}

# ---------------------------------------------------------------- 3. nginx -t on every example
my $nginx = $ENV{NGINX_BIN} || '/usr/sbin/nginx';
my ($version) = `$nginx -v 2>&1` =~ m{nginx/(\d+\.\d+\.\d+)};
my $http2_directive = version_at_least($version, '1.25.1');
my $with_ssl = `$nginx -V 2>&1` =~ /--with-http_ssl_module/;
sub version_at_least {
    my ($v, $min) = @_;
    my @v = split /\./, $v // '0.0.0';
    my @m = split /\./, $min;
    for (0 .. 2) { return $v[$_] > $m[$_] if $v[$_] != $m[$_] }
    return 1;
}

my $main_lines = slurp("$root/examples/thread-pool.conf");
my @examples = sort glob "$root/examples/*.conf";
ok scalar(@examples) >= 8, 'examples/ holds the configurations (' . scalar(@examples) . ')';
for my $path (@examples) {
    (my $name = $path) =~ s{^\Q$root\E/}{};
    my $text = slurp($path);
    my ($context) = $text =~ /^# context: (nginx\.conf|main|http|server)\b/m;
    ok defined $context, "$name says where it goes (# context: nginx.conf|main|http|server)" or next;
    SKIP: {
        skip "$name needs TLS and this nginx has no http_ssl_module", 2 if $text =~ /\bssl\b/ && !$with_ssl;
        my ($rc, $out) = nginx_t($name, $context, $text);
        is $rc, 0, "$name passes nginx -t" or diag $out;
        unlike $out, qr/\[(?:warn|emerg|alert|crit)\]/, "$name: nginx -t says nothing worse than notice" or diag $out;
    }
}

# The example, rewritten by the rules above, through nginx -t: (exit status, output).
sub nginx_t {
    my ($name, $context, $text) = @_;
    my $t = SigninTest->new;
    my $p = $t->prefix;
    mkdir "$p/var";
    $text =~ s{/var/lib/nginx-signin/}{$p/var/}g;
    $text =~ s{\bclient_secret_file=\S*?([\w.-]+)(?=[\s;])}{write_file("$p/$1", "s3cret\n"); "client_secret_file=$p/$1"}ge;
    $text =~ s{(\bsignin_smtp_auth_file)\s+\S*?([\w.-]+);}{write_file("$p/$2", "mailer:s3cret\n"); "$1 $p/$2;"}ge;
    $text =~ s{\bsecret_file=\S*?([\w.-]+)(?=[\s;])}{write_file("$p/$1", "0123456789abcdef0123456789abcdef\n"); "secret_file=$p/$1"}ge;
    $text =~ s{(\bsignin_oidc_signing_key_file)\s+\S*?([\w.-]+);}{rsa_key("$p/$2"); "$1 $p/$2;"}ge;
    $text =~ s{(\bsignin_events_secret_file)\s+\S*?([\w.-]+);}{write_file("$p/$2", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"); "$1 $p/$2;"}ge;
    if ($text =~ /\bssl_certificate\b/) {
        my $out = `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost -keyout '$p/tls.key' -out '$p/tls.crt' 2>&1`;
        die "openssl: $out" if $?;
        $text =~ s{^(\s*ssl_certificate)\s+\S+;}{$1 $p/tls.crt;}mg;
        $text =~ s{^(\s*ssl_certificate_key)\s+\S+;}{$1 $p/tls.key;}mg;
    }
    $text =~ s{(\bsignin_store\s+postgres(?:ql)?://(?:[^@/\s;]*@)?)[^/\s;]+}{${1}127.0.0.1:1}g;
    $text =~ s{^(\s*proxy_ssl_trusted_certificate)\s+(\S+);}{-f $2 ? "$1 $2;" : "$1 $p/tls.crt;"}mge;
    $text =~ s{^(\s*)listen\s+([^;]*?)\s+http2\b([^;]*);}{$1listen $2$3;\n$1http2 on;}mg if $http2_directive;
    my %upstream = map { $_ => 1 } $text =~ /^\s*upstream\s+(\S+)\s*\{/mg;
    my %hosts = map { $_ => 1 } grep { !$upstream{$_} && !/^[\d.]+$|^\[|^localhost$|\$/ } $text =~ m{proxy_pass\s+https?://([^/:;\s]+)}g;
    my $upstreams = join '', map { "upstream $_ { server 127.0.0.1:" . $t->port2 . "; }\n" } sort keys %hosts;

    if ($context eq 'nginx.conf') {
        $text =~ s{^load_module\s+modules/ngx_http_signin_module\.so;}{load_module $ENV{SIGNIN_MODULE};}m
            or return (1, "$name: no load_module line for the module");
        my $inside = "    access_log $p/access.log;\n"
            . join('', map { "    ${_}_temp_path $p/temp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi))
            . $upstreams;
        $text =~ s{^(http\s*\{[^\n]*\n)}{$1$inside}m or return (1, "$name: no http { line");
        write_file("$p/nginx.conf", $text);
        # the object's nginx command: with SIGNIN_SANITIZE=1 it preloads the sanitizers' runtime
        my $out = `$t->{nginx} -p $p -e $p/error.log -g 'pid $p/nginx.pid;' -c $p/nginx.conf -t 2>&1`;
        return ($? >> 8, $out);
    }
    if ($context eq 'main') {
        return $t->nginx_t(main => $text, http => '');
    }
    my %base = (
        signin_store  => "signin_store $p/store;",
        signin_origin => 'signin_origin https://app.example.com;',
        signin_limits => 'signin_limits zone=signin:1m;',
        signin_email  => 'signin_email off;',
    );
    delete $base{signin_email} if $text =~ /^\s*signin_(delivery|smtp)\s/m;
    my $base = join "\n", map { $base{$_} } grep { $text !~ /^\s*\Q$_\E\s/m } sort keys %base;
    my $body = $context eq 'server' ? "server {\n    listen 127.0.0.1:%%PORT%%;\n$text\n}" : $text;
    return $t->nginx_t(main => $main_lines, http => "$upstreams$base\n$body");
}

sub write_file {
    my ($f, $content) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $content;
    close $fh;
}

# A private key for signin_oidc_signing_key_file (RSA 2048, as the example's comment makes it).
sub rsa_key {
    my ($f) = @_;
    return if -s $f;
    system("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out '$f' 2>/dev/null") == 0
        or die "openssl genpkey: $?";
}

done_testing;
