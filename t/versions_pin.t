# api_versions_pin signin: a signed-in caller (session cookie or bearer token) whose request names
# no version is answered in the version pinned to its account, pinned at its first versioned
# request to the default of then; an explicit version wins and leaves the pin; a stranger gets the
# default; signin-admin api-version shows, sets and clears the pin. On LMDB, and on PostgreSQL
# with SIGNIN_TEST_PG (the pin is then read in the thread pool, the rewrite phase waiting).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

# nginx -t: the pins are kept on the accounts, so a configuration without signin_store is refused
{
    my $t = SigninTest->new;
    my ($rc, $out) = $t->nginx_t(http => q{
    api_versions { strategy header X-API-Version; default v1; version v1 { controller @v1 { GET /things; } } }
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ {
            api_versions_pin signin;
            api_versions_route;
        }
        location @v1 { return 200 "v1"; }
    }});
    isnt $rc, 0, 'nginx -t refuses api_versions_pin signin without signin_store';
    like $out, qr/"api_versions_pin signin" needs "signin_store".* in \S*nginx\.conf:\d+/, '... naming the file and line';
    ($rc, $out) = $t->nginx_t(http => $t->signin_http(locations => q{location /api/ { api_versions_pin sometimes; }}));
    isnt $rc, 0, 'an unknown value is refused';
    like $out, qr/invalid value "sometimes" \(signin or off\)/, '... saying which';
}

my $t = SigninTest->new;
plan skip_all => 'signin-admin is not built (SIGNIN_ADMIN)' unless $t->{admin};

sub conf {
    my ($default, $more) = @_;
    $more //= '';
    return $t->signin_http(extra => qq{
signin_limits off;
$more
api_versions {
    strategy header X-API-Version;
    default $default;
    version v0 sunset=2020-01-01 gone { controller \@v1 { GET /things; } }
    version v1 { controller \@v1 { GET /things; } }
    version v2 { controller \@v2 { GET /things; POST /things; } }
    version v3 { controller \@v3 { GET /things; } }
}
}, locations => q{
location /api/ { api_versions_pin signin; api_versions_route; }
location /open/ { api_versions_route; }
location /secure/ { signin_require on; api_versions_pin signin; api_versions_route; }
location @v1 { return 200 "v1 $api_version\n"; }
location @v2 { return 200 "v2 $api_version\n"; }
location @v3 { return 200 "v3 $api_version\n"; }
});
}

# The version that answered, or "STATUS body" when it was not a 200.
sub answered {
    my ($path, %h) = @_;
    my $r = $t->req(GET => $path, headers => \%h);
    return "$r->{status} $r->{content}" if $r->{status} != 200;
    my ($v) = $r->{content} =~ /^(\S+)/;
    return $v;
}

sub pin_of {
    my ($email) = @_;
    my ($rc, $out) = $t->admin_text('api-version', $email);
    die "api-version $email: $rc $out" if $rc != 0;
    chomp $out;
    return $out;
}

# The pin is written in the background after the answer: waits (bounded) until it is `want`.
sub pinned_to {
    my ($email, $want) = @_;
    my $got;
    $t->wait_for(sub { ($got = pin_of($email)) eq $want }, timeout => 10);
    return $got;
}

$t->run(http => conf('v2'));
my $alice = 'alice@example.com';
my $cookie = $t->sign_in($alice);

is pin_of($alice), '-', 'a new account has no pin';
is answered('/api/things'), 'v2', 'a stranger gets the default';
{
    sub vary { my $v = $_[0]{headers}{vary} // ''; ref $v ? join(', ', @$v) : $v }
    my $r = $t->req(GET => '/api/things');
    like vary($r), qr/\bCookie\b.*\bAuthorization\b/i, 'an answer without a version varies by the credentials';
    $r = $t->req(GET => '/api/things', headers => { 'x-api-version' => 'v1' });
    unlike vary($r), qr/Cookie/i, '... one with a version does not';
}
is answered('/api/things', cookie => $cookie), 'v2', 'a signed-in caller\'s first request is answered in the default';
is pinned_to($alice, 'v2'), 'v2', '... and pins its account to it';
my ($rc, $out) = $t->admin('api-version', $alice);
like $out, qr/"api_version":"v2"/, 'signin-admin --json api-version shows it too';

is answered('/api/things', cookie => $cookie, 'x-api-version' => 'v1'), 'v1', 'an explicit version wins';
is pin_of($alice), 'v2', '... and leaves the pin';
is answered('/api/things', cookie => 'svc_dev_session=not-a-session'), 'v2', 'an unknown session is a stranger';

# the default moves on: the pinned account keeps its version, strangers and new accounts get the new one
$t->reload(http => conf('v3'));
is answered('/api/things'), 'v3', 'after the default changed, a stranger gets the new default';
is answered('/api/things', cookie => $cookie), 'v2', 'the pinned caller keeps its version';
{   # a body waits while the pin is read (in the thread pool on PostgreSQL), then reaches the controller
    my $r = $t->req(POST => '/api/things', headers => { cookie => $cookie, origin => $t->origin }, json => { n => 1 x 5000 });
    is "$r->{status} " . ($r->{content} =~ s/\s.*//sr), '200 v2', 'a POST with a body is answered in the pinned version too';
}
is answered('/api/things', cookie => $cookie, 'x-api-version' => 'v3'), 'v3', 'and may still ask for another';
is pin_of($alice), 'v2', '... which leaves the pin';
is answered('/open/things', cookie => $cookie), 'v3', 'a location without api_versions_pin answers the default';
is answered('/secure/things', cookie => $cookie), 'v2', 'behind signin_require too (the session read twice: rewrite and access)';
like answered('/secure/things'), qr/^401 /, '... where a stranger is still refused';
like answered('/secure/things', cookie => $cookie, 'x-api-version' => 'v9'), qr/^400 .*unknown_api_version/,
    'an unknown version named by a signed-in caller: 400, the pin does not hide it';

my $bearer = $t->bearer($alice);
is answered('/api/things', authorization => "Bearer $bearer"), 'v2', 'a bearer token of the pinned account gets its version';
my $bob = 'bob@example.com';
my $bob_bearer = $t->bearer($bob);
is answered('/api/things', authorization => "Bearer $bob_bearer"), 'v3', 'a new account\'s bearer gets the default';
is pinned_to($bob, 'v3'), 'v3', '... and pins it';
like answered('/api/things', authorization => "Bearer $bob_bearer", cookie => $cookie), qr/^v3$/,
    'a cookie and a bearer together are nobody\'s: the default';

# signin-admin api-version sets and clears
($rc, $out) = $t->admin_text('api-version', $alice, 'v1');
is $rc, 0, 'signin-admin api-version EMAIL NAME sets the pin';
like $out, qr/API version v1 pinned/, '... and says so';
is pin_of($alice), 'v1', '... which it then shows';
is answered('/api/things', cookie => $cookie), 'v1', 'the caller is answered in the version set';
($rc, $out) = $t->admin_text('api-version', $alice, '-');
is $rc, 0, 'signin-admin api-version EMAIL - clears it';
is pin_of($alice), '-', '... no pin';
is answered('/api/things', cookie => $cookie), 'v3', 'a cleared account is answered in the default';
is pinned_to($alice, 'v3'), 'v3', '... and pinned again at that request';
($rc, $out) = $t->admin_text('api-version', $alice, 'a b');
is $rc, 1, 'a name no version could have is refused';
like $out, qr/version's name/, '... saying why';
is pin_of($alice), 'v3', '... and the pin stays';
($rc, $out) = $t->admin_text('api-version', 'nobody@example.com', 'v1');
isnt $rc, 0, 'an unknown account is an error';
like $out, qr/no such account/, '... saying so';

# a pin that names a version the configuration no longer has: the default, said in the log
$t->admin_text('api-version', $alice, 'v9');
is answered('/api/things', cookie => $cookie), 'v3', 'a pin to a version no longer declared answers the default';
like $t->error_log, qr/\[info\].*api_versions_pin: the account's version "v9" is not declared any more/,
    '... said in the log at info';
is pin_of($alice), 'v9', '... and the pin is left for the operator';

# a retired version answers 410, as an explicit request for it would
$t->admin_text('api-version', $alice, 'v0');
my $r = $t->req(GET => '/api/things', headers => { cookie => $cookie });
is $r->{status}, 410, 'a pin to a retired version answers 410';
is $r->{json}{code}, 'version_retired', '... version_retired';

$t->done;

# A pinned caller on a route whose answers the version changes migrate: the upstream speaks only
# the newest shape (v2: "full_name"), and a caller pinned to v1 gets v1's ("name") without naming it.
{
    my $m = SigninTest->new;
    my $conf = sub {
        my ($default) = @_;
        return $m->signin_http(extra => qq{
signin_limits off;
api_versions {
    strategy header X-API-Version;
    default $default;
    version v1 { controller \@legacy { GET /user; } }
    version v2 { field_renamed /name /full_name; }
}
}, locations => q{
location /api/ { api_versions_pin signin; api_versions_route; }
location @legacy { proxy_pass http://127.0.0.1:%%PORT2%%; }
}, servers => q{
server {
    listen 127.0.0.1:%%PORT2%%;
    location / { default_type application/json; return 200 '{"id":7,"full_name":"Ada"}'; }
}
});
    };
    $m->run(http => $conf->('v1'));
    my $dora = 'dora@example.com';
    my $dc = $m->sign_in($dora);
    my $r = $m->req(GET => '/api/user', headers => { cookie => $dc });
    is $r->{content}, '{"id":7,"name":"Ada"}', 'a caller answered in the default v1 gets v1\'s shape from the v2 upstream';
    my $pin;
    $m->wait_for(sub { (undef, $pin) = $m->admin_text('api-version', $dora); $pin =~ /^v1$/m }, timeout => 10);
    like $pin, qr/^v1$/m, '... and is pinned to v1';
    $m->reload(http => $conf->('v2'));
    $r = $m->req(GET => '/api/user', headers => { cookie => $dc });
    is $r->{content}, '{"id":7,"name":"Ada"}', 'after the default moved to v2, the pinned caller still gets v1\'s shape';
    is $r->{headers}{'content-length'}, length($r->{content}), '... with its Content-Length';
    is $m->req(GET => '/api/user')->{content}, '{"id":7,"full_name":"Ada"}', '... and a stranger the new default\'s';
    $m->done;
}

# PostgreSQL with signin_session_cache: the pin is read from the worker's cache when it holds the
# session (a pin read in the thread pool fills it), and the cache forgets the session once its
# first pin is written
if ($ENV{SIGNIN_TEST_PG}) {
    $t = SigninTest->new;
    $t->run(http => conf('v2', 'signin_session_cache 60s;'), workers => 1);
    my $carol = 'carol@example.com';
    my $c = $t->sign_in($carol);
    is answered('/api/things', cookie => $c), 'v2', 'with signin_session_cache: the first request gets the default';
    is pinned_to($carol, 'v2'), 'v2', '... and pins it';
    is answered('/secure/things', cookie => $c), 'v2', '... and later ones (the gate too) get it';
    $t->reload(http => conf('v3', 'signin_session_cache 60s;'), workers => 1);
    is answered('/api/things', cookie => $c), 'v2', 'after the default changed, the pin holds (read, then cached)';
    is answered('/api/things', cookie => $c), 'v2', '... from the cache too';
    is answered('/api/things'), 'v3', '... and a stranger gets the new default';
    $t->done;
}
done_testing;
