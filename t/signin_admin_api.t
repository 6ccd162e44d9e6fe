# The administrators' JSON API (signin_admin): nginx -t refuses it without second factors; a
# non-administrator gets 403 everywhere; an administrator whose session did not pass a second
# factor reads but cannot change; each change answers 204 and leaves its audit entry with the
# client admin:<id>; a cookie change needs the site's Origin; bad ids and cursors are 400; the
# search pages through a domain; the audit exports as CSV; the dashboard's counts, with and
# without signin_metrics; no answer holds a secret; with signin_admin off the paths are 404.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use JSON::PP;

my $oathtool = SigninTest::which('oathtool');
plan skip_all => 'no oathtool (build.sh installs Debian\'s oathtool)' unless $oathtool;

my $t = SigninTest->new;

# ---- nginx -t
{
    my ($rc, $out) = $t->nginx_t(http => $t->signin_http(extra => 'signin_admin on;'));
    isnt $rc, 0, 'nginx -t: signin_admin on without signin_mfa is refused';
    like $out, qr/signin_admin needs "signin_mfa on"/, '... saying why';
    ($rc, $out) = $t->nginx_t(http => $t->signin_http(extra => 'signin_mfa on; signin_admin on; signin_admin_role "no way";'));
    isnt $rc, 0, 'nginx -t: a signin_admin_role that is not a role is refused';
    like $out, qr/signin_admin_role "no way" is not a role/, '... saying why';
}

$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on; signin_admin on;}));
my $origin = $t->origin;
my $O = { origin => $origin };
my $JSON = JSON::PP->new->canonical;

sub api { my ($m, $path, %o) = @_; $t->req($m => "/auth/admin/api/$path", %o) }
sub code_of { my ($r) = @_; return $r->{json} ? $r->{json}{code} // '' : '' }

my ($boss_cookie, $boss, $recovery) = $t->mfa_enrolled('boss@acme.example');
my ($rc) = $t->admin('role', 'add', 'boss@acme.example', 'admin');
is $rc, 0, 'signin-admin grants boss the admin role';
# a bearer token of the same administrator, through the second factor
my $r = $t->req(POST => '/auth/token', json => { token => $t->request_token('boss@acme.example', login => 1) });
is $r->{status}, 202, 'boss\'s bearer sign-in stops at the factor';
$r = $t->req(POST => '/auth/mfa/token', json => { mfa_token => $r->{json}{mfa_token}, recovery_code => $recovery->[0] });
is $r->{status}, 200, '... and passes it';
my $B = { authorization => "Bearer $r->{json}{access_token}" };

my ($helper_cookie, $helper) = $t->sign_in('helper@acme.example');
$t->admin('role', 'add', 'helper@acme.example', 'admin');
my ($carol_cookie, $carol) = $t->sign_in('carol@acme.example');
my ($dave_cookie, $dave) = $t->sign_in('dave@acme.example');

# ---- who may
is api(GET => 'users')->{status}, 401, 'no credential: 401';
for my $k (['GET', 'users'], ['GET', "users/$dave->{id}"], ['GET', 'audit'], ['POST', "users/$dave->{id}/suspend"],
           ['POST', 'invitations'], ['GET', 'stats']) {
    my ($m, $p) = @$k;
    $r = api($m => $p, headers => { %$O, cookie => $carol_cookie }, ($m eq 'POST' ? (json => {}) : ()));
    is $r->{status}, 403, "a non-administrator: $m $p is 403";
    is code_of($r), 'forbidden', '... forbidden';
}
$r = api(GET => 'users?q=dave@acme.example', headers => { cookie => $helper_cookie });
is $r->{status}, 200, 'an administrator without a passed second factor reads';
is_deeply [map { $_->{email} } @{ $r->{json}{users} }], ['dave@acme.example'], '... the account searched for';
$r = api(POST => "users/$dave->{id}/suspend", json => {}, headers => { %$O, cookie => $helper_cookie });
is $r->{status}, 403, '... but cannot change it';
is code_of($r), 'fresh_session_required', '... fresh_session_required';
is $t->req(GET => '/auth/me', headers => { cookie => $dave_cookie })->{status}, 200, '... and dave is not suspended';

# ---- the search
$t->admin('invite', "p$_\@paged.example") for 1 .. 5;
my (@seen, $next, $pages);
do {
    $r = api(GET => 'users?q=%40paged.example&limit=2' . (defined $next ? "&after=$next" : ''), headers => $B);
    is $r->{status}, 200, 'a page of @paged.example';
    push @seen, map { $_->{email} } @{ $r->{json}{users} };
    $next = $r->{json}{next};
} while (defined $next && ++$pages < 10);
is_deeply [sort @seen], [map { "p$_\@paged.example" } 1 .. 5], 'the pages hold every account of the domain once';
$r = api(GET => 'users?state=pending&q=%40paged.example', headers => $B);
is scalar @{ $r->{json}{users} }, 5, 'invited and never signed in: pending';
is $r->{json}{users}[0]{state}, 'pending', '... state pending';
$r = api(GET => 'users?q=%40paged.example&limit=1', headers => $B);
my $cursor = $r->{json}{next};
ok $cursor, 'a cursor';
$r = api(GET => "users?q=carol&after=$cursor", headers => $B);
is $r->{status}, 400, 'a cursor of another search: 400';
is api(GET => 'users?after=%25%25not-base64', headers => $B)->{status}, 400, 'a cursor that is no cursor: 400';
is api(GET => 'users?limit=0', headers => $B)->{status}, 400, 'limit 0: 400';
is api(GET => 'users?state=gone', headers => $B)->{status}, 400, 'an unknown state: 400';

# ---- a person
is api(GET => 'users/not-an-id', headers => $B)->{status}, 400, 'an id that is no user id: 400';
is api(GET => 'users/' . uc($dave->{id}), headers => $B)->{status}, 400, '... upper case too';
$r = api(GET => 'users/01234567-89ab-7def-8123-456789abcdef', headers => $B);
is $r->{status}, 404, 'an unknown user id: 404';
is api(GET => "users/$dave->{id}/", headers => $B)->{status}, 404, 'a trailing slash is no route';
is api(GET => "users/$dave->{id}/sessions", headers => $B)->{status}, 404, 'a path below an id that is no route: 404';
is api(GET => "users/$dave->{id}/suspend", headers => $B)->{status}, 405, 'GET of a change: 405';
$r = api(GET => "users/$boss->{id}", headers => $B);
is $r->{status}, 200, 'GET users/{id}';
is $r->{json}{user}{email}, 'boss@acme.example', '... the account';
is_deeply $r->{json}{user}{roles}, ['admin'], '... its roles';
is $r->{json}{mfa}{totp}, JSON::PP::true, '... its second factor is on';
ok scalar @{ $r->{json}{sessions} } >= 2, '... its sessions';
ok scalar @{ $r->{json}{audit} }, '... its audit entries';
unlike $r->{content}, qr/secret|password_hash|"token"|\Q$recovery->[1]\E/i, '... and nothing secret';

# ---- each change, audited as admin:<id>
my $actor = "admin:$boss->{id}";
sub audited {
    my ($kind, $user_id, $name) = @_;
    my $r = api(GET => "audit?kind=$kind&user=$user_id", headers => $B);
    my ($e) = @{ $r->{json}{entries} || [] };
    ok $e && $e->{client} eq $actor, "$name: audited $kind as $actor" or diag $r->{content};
}
sub change_ok {
    my ($path, $body, $name, %h) = @_;
    my $r = api(POST => $path, json => $body, headers => { %$B, %h });
    is $r->{status}, 204, $name or diag $r->{content};
}

change_ok("users/$dave->{id}/suspend", {}, 'suspend: 204');
audited('user.suspended', $dave->{id}, 'suspend');
is $t->req(GET => '/auth/me', headers => { cookie => $dave_cookie })->{status}, 401, '... dave\'s session stops working';
change_ok("users/$dave->{id}/unsuspend", {}, 'unsuspend: 204');
audited('user.restored', $dave->{id}, 'unsuspend');
is $t->req(GET => '/auth/me', headers => { cookie => $dave_cookie })->{status}, 200, '... it works again';

change_ok("users/$dave->{id}/sessions/revoke", {}, 'sessions/revoke: 204');
audited('session.revoked', $dave->{id}, 'sessions/revoke');
is $t->req(GET => '/auth/me', headers => { cookie => $dave_cookie })->{status}, 401, '... dave is signed out';

my ($erin_cookie, $erin) = $t->mfa_enrolled('erin@acme.example');
change_ok("users/$erin->{id}/mfa/reset", {}, 'mfa/reset: 204');
audited('mfa.reset', $erin->{id}, 'mfa/reset');
is api(GET => "users/$erin->{id}", headers => $B)->{json}{mfa}{totp}, JSON::PP::false, '... erin has no factor now';

change_ok("users/$carol->{id}/roles", { add => ['editor', 'Support'] }, 'roles add: 204');
audited('user.role_added', $carol->{id}, 'roles add');
is_deeply api(GET => "users/$carol->{id}", headers => $B)->{json}{user}{roles}, ['editor', 'support'], '... carol holds them';
change_ok("users/$carol->{id}/roles", { remove => ['editor'] }, 'roles remove: 204');
audited('user.role_removed', $carol->{id}, 'roles remove');
is_deeply api(GET => "users/$carol->{id}", headers => $B)->{json}{user}{roles}, ['support'], '... and one is gone';
is api(POST => "users/$carol->{id}/roles", json => {}, headers => $B)->{status}, 400, 'roles with none named: 400';
is api(POST => "users/$carol->{id}/roles", json => { add => 'editor' }, headers => $B)->{status}, 400,
    'roles not given as a list: 400';
is api(POST => "users/$carol->{id}/roles", json => { add => ['no way'] }, headers => $B)->{status}, 400, 'a bad role: 400';
is api(POST => "users/$boss->{id}/roles", json => { remove => ['admin'] }, headers => $B)->{status}, 400,
    'an administrator cannot take their own role';
is api(POST => "users/$boss->{id}/suspend", json => {}, headers => $B)->{status}, 400, '... nor suspend themselves';
is api(POST => "users/$dave->{id}/suspend", json => { why => 'x' }, headers => $B)->{status}, 400, 'a body with a field: 400';
is api(POST => 'users/not-an-id/suspend', json => {}, headers => $B)->{status}, 400, 'a change to no user id: 400';
is api(POST => 'users/01234567-89ab-7def-8123-456789abcdef/suspend', json => {}, headers => $B)->{status}, 404,
    'a change to an unknown account: 404';

$r = api(POST => 'invitations', json => { email => 'newbie@acme.example', roles => ['editor'], send => JSON::PP::true },
    headers => $B);
is $r->{status}, 202, 'an invitation sent: 202';
is_deeply $r->{json}, { email => 'newbie@acme.example', sent => JSON::PP::true }, '... and no token in the answer';
my $mail = $t->last_email('newbie@acme.example');
ok $mail && $mail->{purpose} eq 'Invitation', '... the invitation email went out';
$r = api(GET => 'users?q=newbie%40acme.example', headers => $B);
my ($newbie) = @{ $r->{json}{users} };
is_deeply $newbie->{roles}, ['editor'], '... the account holds the role';
audited('user.invited', $newbie->{id}, 'invitation');
$r = api(POST => 'invitations', json => { email => 'quiet@acme.example' }, headers => $B);
is $r->{status}, 200, 'an invitation not sent: 200';
is $r->{json}{sent}, JSON::PP::false, '... sent false';
is api(POST => 'invitations', json => { email => 'not an address' }, headers => $B)->{status}, 400, 'a bad address: 400';

change_ok("users/$dave->{id}/delete", {}, 'delete: 204');
audited('user.deleted', $dave->{id}, 'delete');
is api(GET => "users/$dave->{id}", headers => $B)->{status}, 404, '... dave is gone';
is api(POST => "users/$boss->{id}/delete", json => {}, headers => $B)->{status}, 400, 'not one\'s own account';

# ---- a change by cookie needs the site's Origin
my $target = $carol->{id};
$r = api(POST => "users/$target/suspend", json => {}, headers => { cookie => $boss_cookie });
is $r->{status}, 403, 'a cookie change without an Origin: 403';
is code_of($r), 'origin_mismatch', '... origin_mismatch';
$r = api(POST => "users/$target/suspend", json => {}, headers => { cookie => $boss_cookie, 'sec-fetch-site' => 'same-origin' });
is $r->{status}, 403, '... even when the browser says same-origin';
$r = api(POST => "users/$target/suspend", json => {}, headers => { cookie => $boss_cookie, origin => 'https://evil.example' });
is $r->{status}, 403, 'a cookie change from another origin: 403';
is $t->req(GET => '/auth/me', headers => { cookie => $carol_cookie })->{status}, 200, '... carol was not suspended';
$r = api(POST => "users/$target/suspend", json => {}, headers => { %$B, origin => 'https://evil.example' });
is $r->{status}, 403, 'a bearer change with a wrong Origin: 403';
$r = api(POST => "users/$target/suspend", json => {}, headers => { cookie => $boss_cookie, %$O });
is $r->{status}, 204, 'a cookie change with the site\'s Origin: 204';
change_ok("users/$target/unsuspend", {}, '... and back');

# ---- the audit, as JSON and CSV
$r = api(GET => 'audit?kind=user.suspended&limit=5', headers => $B);
is $r->{status}, 200, 'GET audit';
ok @{ $r->{json}{entries} } >= 2, '... the suspensions';
ok !grep({ $_->{kind} ne 'user.suspended' } @{ $r->{json}{entries} }), '... of that kind only';
$r = api(GET => 'audit?since=2100-01-01T00:00:00Z', headers => $B);
is_deeply $r->{json}{entries}, [], 'since a time to come: nothing';
is api(GET => 'audit?since=yesterday', headers => $B)->{status}, 400, 'a time that is no time: 400';
is api(GET => 'audit?format=xml', headers => $B)->{status}, 400, 'an unknown format: 400';
$r = api(GET => 'audit?kind=user.suspended&format=csv', headers => $B);
is $r->{status}, 200, 'GET audit?format=csv';
like $r->{headers}{'content-type'}, qr{^text/csv}, '... text/csv';
like $r->{headers}{'cache-control'}, qr/no-store/, '... not stored by caches';
my @lines = split /\r\n/, $r->{content};
is $lines[0], 'at,kind,email,client,user_id,detail', '... its header';
ok scalar(grep { /^\d{4}-\d\d-\d\dT[^,]+,user\.suspended,carol\@acme\.example,\Q$actor\E,\Q$carol->{id}\E,/ } @lines),
    '... a row per entry, with the administrator as client';

# ---- the dashboard's counts: none without a signin_metrics location
$r = api(GET => 'stats', headers => $B);
is $r->{status}, 200, 'GET stats';
is $r->{json}{metrics}, JSON::PP::false, '... without a signin_metrics location, metrics is false';
ok !exists $r->{json}{totals} && !exists $r->{json}{minutes}, '... and nothing counted is shown';
ok exists $r->{json}{store}{used_bytes} && exists $r->{json}{store}{map_bytes}, '... only the store\'s use (0 on PostgreSQL, which gives no such figure)';
is api(GET => 'stats', headers => { cookie => $helper_cookie })->{status}, 200,
    '... read without a passed second factor, as every read';

# ---- nothing secret, anywhere
my $all = join '', map { api(GET => $_, headers => $B)->{content} } 'users', "users/$boss->{id}", "users/$erin->{id}", 'audit?limit=500';
unlike $all, qr/"(?:token|secret|password_hash|code)"/, 'no answer has a token, secret, hash or code field';

# ---- the dashboard with signin_metrics: the totals, and this minute's sign-ins and refusals
$t->stop;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on; signin_admin on;},
                                locations => q{location = /m { signin_metrics; }}));
$t->sign_in('frank@acme.example') for 1 .. 2;
$t->req(POST => '/auth/session', json => { token => 'x' x 43 }, headers => $O) for 1 .. 3;    # refused: invalid_token
$r = api(GET => 'stats', headers => $B);
is $r->{status}, 200, 'with signin_metrics: GET stats';
is $r->{json}{metrics}, JSON::PP::true, '... metrics is true';
ok $r->{json}{totals}{signins}{email} >= 2, '... the sign-ins by email are counted';
ok $r->{json}{totals}{failures}{invalid_token} >= 3, '... and the refusals by reason';
is scalar @{ $r->{json}{minutes}{signins} }, 60, '... 60 minutes';
is scalar @{ $r->{json}{hours}{failures} }, 48, '... and 48 hours';
is $r->{json}{minutes}{step_seconds}, 60, '... a minute apart';
my $last = $r->{json}{minutes};
# the sign-ins fall in this minute or (at its turn) the one before
cmp_ok $last->{signins}[-1] + $last->{signins}[-2], '>=', 2, '... the sign-ins in the last minutes';
cmp_ok $last->{failures}[-1] + $last->{failures}[-2], '>=', 3, '... and the refusals';
cmp_ok $r->{json}{hours}{signins}[-1] + $r->{json}{hours}{signins}[-2], '>=', 2, '... and in the hours';
like $last->{start}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/, '... starting on a minute';

# ---- signin_admin off: the paths are not there, for an administrator either
$t->stop;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on;}));
$r = api(GET => 'users', headers => $B);
is $r->{status}, 404, 'signin_admin off: GET admin/api/users is 404';
is code_of($r), 'not_found', '... not_found';
is api(POST => "users/$carol->{id}/suspend", json => {}, headers => $B)->{status}, 404, '... and so is a change';
is $t->req(GET => '/auth/me', headers => $B)->{status}, 200, '... while the rest of the API answers';

# ---- signin_admin per location: written beside signin_api alone, or turned off there
$t->stop;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on;}, auth => 'signin_admin on;'));
is api(GET => 'users', headers => $B)->{status}, 200, 'signin_admin on in the signin_api location alone: the API answers';
$t->stop;
$t->run(http => $t->signin_http(extra => q{signin_limits off; signin_mfa on; signin_admin on;}, auth => 'signin_admin off;'));
is api(GET => 'users', headers => $B)->{status}, 404, 'on at the http level, off in the location: 404';
{
    my ($rc, $out) = $t->nginx_t(http => $t->signin_http(extra => 'signin_limits off;', auth => 'signin_admin on;'));
    isnt $rc, 0, 'nginx -t: signin_admin on in a location without signin_mfa is refused';
    like $out, qr/signin_admin needs "signin_mfa on"/, '... saying why';
}

$t->done;
done_testing;
