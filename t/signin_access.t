# Who may pass a gate (issue #21): signin_allow / signin_deny with email, domain,
# role, file and all; evaluated in order, first match wins; a level with rules replaces the outer
# list; a signed-in user who is refused gets 403 `forbidden` (or the location's error_page), and
# the upstream gets no identity; subrequests (auth_request) are checked the same way; roles from
# signin-admin reach GET /me and $signin_user_roles; nginx -t names a mistake.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
open my $fh, '>', $t->prefix . '/people.txt' or die;
print $fh "# the partners\n\@partner.example\ncarol\@elsewhere.example   # a guest\n";
close $fh;

my $backend = q{
            proxy_set_header X-User $signin_user_email;
            proxy_set_header X-Roles $signin_user_roles;
            proxy_pass http://127.0.0.1:%%PORT2%%/echo;};
$t->run(http => $t->signin_http(extra => 'signin_limits off;', locations => qq{
        signin_allow domain acme.com;
        location /inherit/ { signin_require on; $backend }
        location /staff/ { signin_require on; signin_allow role staff; signin_deny all; $backend }
        location /not-mallory/ { signin_require on; signin_deny email mallory\@acme.com; $backend }
        location /people/ { signin_require on; signin_allow file people.txt; $backend }
        location /one/ { signin_require on; signin_allow email eve\@evil.example; $backend }
        location /page/ {
            signin_require on; signin_allow role staff;
            error_page 403 /denied.html;
            $backend
        }
        location = /denied.html { return 200 "this page is not for you"; }
        location /via-auth/ { auth_request /staff/probe; $backend }}, servers => q{
    server {
        listen 127.0.0.1:%%PORT2%%;
        location /echo { return 200 "$http_x_user|$http_x_roles"; }
    }}));

my %cookie;
for my $who (qw(alice@acme.com bob@acme.com mallory@acme.com eve@evil.example zed@partner.example carol@elsewhere.example)) {
    $cookie{$who} = $t->sign_in($who);
}
my ($rc, $out) = $t->admin('role', 'add', 'alice@acme.com', 'staff');
is $rc, 0, 'signin-admin role add' or diag $out;
($rc, $out) = $t->admin('role', 'add', 'alice@acme.com', 'on-call');
is $rc, 0, 'a second role';

sub get {
    my ($path, $who) = @_;
    return $t->req(GET => $path, headers => $who ? { cookie => $cookie{$who} } : {});
}

my $r = get('/auth/me', 'alice@acme.com');
is_deeply $r->{json}{roles}, ['on-call', 'staff'], 'GET /me lists the roles, sorted';
is_deeply get('/auth/me', 'bob@acme.com')->{json}{roles}, [], 'none for bob';

# the server-level list reaches a location without rules of its own
$r = get('/inherit/x', 'bob@acme.com');
is $r->{status}, 200, 'inherited "allow domain acme.com": bob passes';
is $r->{content}, 'bob@acme.com|', 'and the upstream gets his address';
$r = get('/inherit/x', 'eve@evil.example');
is $r->{status}, 403, 'another domain: 403';
is $r->{json}{code}, 'forbidden', 'code forbidden';
is get('/inherit/x')->{status}, 401, 'signed out: still 401';

# roles, in order, first match wins
$r = get('/staff/x', 'alice@acme.com');
is $r->{status}, 200, 'allow role staff: alice passes';
is $r->{content}, 'alice@acme.com|on-call,staff', '$signin_user_roles is comma-separated, sorted';
is get('/staff/x', 'bob@acme.com')->{status}, 403, 'bob has no role: deny all';
($rc) = $t->admin('role', 'remove', 'alice@acme.com', 'staff');
is get('/staff/x', 'alice@acme.com')->{status}, 403, 'a removed role no longer passes (the next request)';
$t->admin('role', 'add', 'alice@acme.com', 'staff');

# a level with rules replaces the outer list (it is not added to it)
is get('/one/x', 'eve@evil.example')->{status}, 200, 'the location\'s own list lets eve in';
is get('/one/x', 'alice@acme.com')->{status}, 403, 'and no longer the server\'s domain';
is get('/not-mallory/x', 'mallory@acme.com')->{status}, 403, 'a deny list refuses who it names';
is get('/not-mallory/x', 'eve@evil.example')->{status}, 200, 'and lets the rest in';

# a file of people
is get('/people/x', 'zed@partner.example')->{status}, 200, 'file: @partner.example passes';
is get('/people/x', 'carol@elsewhere.example')->{status}, 200, 'file: a listed address passes';
is get('/people/x', 'bob@acme.com')->{status}, 403, 'file: anyone else does not';

# the location's error_page decides what a refused user sees
$r = get('/page/x', 'bob@acme.com');
is $r->{status}, 403, 'error_page 403: still 403';
is $r->{content}, 'this page is not for you', 'with the location\'s page';
is get('/page/x', 'alice@acme.com')->{status}, 200, 'staff pass';

# a subrequest is checked the same way
is get('/via-auth/x', 'alice@acme.com')->{status}, 200, 'auth_request to a staff location: staff pass';
is get('/via-auth/x', 'bob@acme.com')->{status}, 403, 'others are refused';
$t->done;

# ---------------------------------------------------------------- who may join
my $j = SigninTest->new;
open $fh, '>', $j->prefix . '/guests.txt' or die;
print $fh "guest\@elsewhere.example\n";
close $fh;
$j->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on domain=acme.com file=guests.txt;
    signin_delivery /_signin/deliver;
    signin_limits off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
        location = /_dev/mailbox { signin_dev_mailbox; }
    }
});
my $in = $j->req(POST => '/auth/register', json => { email => 'new@acme.com' });
ok $j->last_email('new@acme.com'), 'domain=acme.com: an address of the domain may join';
ok $j->last_email('guest@elsewhere.example') || do {
    $j->req(POST => '/auth/register', json => { email => 'guest@elsewhere.example' });
    $j->last_email('guest@elsewhere.example') }, 'file=: a listed address may join';
my $out_r = $j->req(POST => '/auth/register', json => { email => 'outsider@evil.example' }, finished => 1);
is $out_r->{status}, $in->{status}, 'an address outside gets the same status';
is $out_r->{content}, $in->{content}, 'and the same body';
$j->assert_nothing_sent('outsider@evil.example', name => 'and no email',
    control => { email => 'control@acme.com' });
my (undef, $audit) = $j->admin('audit', 20);
like $audit, qr/register:not_allowed/, 'the audit trail says why';
$j->done;
my ($jc, $jmsg) = $j->nginx_t(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on domain=acme.com file=/nonexistent/guests.txt;
    signin_delivery /_signin/deliver;
    server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } location = /_signin/deliver { internal; return 204; } }
});
isnt $jc, 0, 'nginx -t refuses a file= that cannot be read';
like $jmsg, qr{signin_registration "/nonexistent/guests.txt" cannot be read}, '... saying so';

# ---------------------------------------------------------------- nginx -t
my $base = <<'EOF';
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    server { listen 127.0.0.1:%%PORT%%; location /auth/ { signin_api; } location = /_signin/deliver { internal; return 204; }
EOF
my $c = SigninTest->new;
for my $case (
    ['signin_allow emial a@b.example;', qr/signin_allow: unknown form "emial"/, 'an unknown form'],
    ['signin_allow email not-an-address;', qr/is not an email address/, 'a bad address'],
    ['signin_deny all everyone;', qr/"all" takes no value/, '"all" with a value'],
    ['signin_allow role "Bad Role";', qr/is not a role/, 'a bad role'],
    ['signin_allow file /nonexistent/people.txt;', qr{signin_allow "/nonexistent/people.txt" cannot be read}, 'a file that cannot be read'],
) {
    my ($line, $re, $name) = @$case;
    my ($code, $msg) = $c->nginx_t(http => "$base location /x/ { signin_require on; $line } }");
    isnt $code, 0, "nginx -t refuses $name";
    like $msg, $re, '... saying so' or diag $msg;
}
open $fh, '>', $c->prefix . '/bad.txt' or die;
print $fh "alice\@acme.com\nnot an address\n";
close $fh;
my ($code, $msg) = $c->nginx_t(http => "$base location /x/ { signin_require on; signin_allow file bad.txt; } }");
isnt $code, 0, 'nginx -t refuses a people file with a bad line';
like $msg, qr/line 2: "not an address" is neither an address nor \@domain/, '... naming the line';

done_testing;
