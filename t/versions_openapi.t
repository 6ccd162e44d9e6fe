# OpenAPI 3.1 document per version: every route the version answers, inherited
# ones included and marked with the version that answers; validated by a third-party validator.
use strict;
use warnings;
use Test::More;
use SigninTest;
use VersionsTest qw(group_http);

my $root = $ENV{SIGNIN_ROOT} || '.';
my $validator = "$root/t/tools/openapi_validate.mjs";
# the third-party validator is optional: without node or the npm package (build.sh test installs
# both) its checks are skipped, the rest of the document is still checked
my $no_validator = SigninTest::missing_node_packages('@seriousme/openapi-schema-validator');
diag "skipping the OpenAPI validator's checks: $no_validator" if $no_validator;

my $no_redocly = SigninTest::missing_node_packages('@redocly/cli');
# `redocly lint` (its recommended rules, as a client generator's user runs it) on each document:
# errors fail, warnings (no licence: the router cannot know it) are allowed
sub redocly_lint {
    my (@files) = @_;
    my $out = `cd $root/t && node node_modules/\@redocly/cli/bin/cli.js lint --format=summary @files 2>&1`;
    return ($? >> 8, $out);
}

my $t = SigninTest->new;
my $http = group_http(strategy => 'path', default => 'v1');
$http =~ s{(location = /openapi\.json)}{location = /openapi-internal.json { api_versions_openapi "Test API" controllers=on mount=/api; }\n        $1};
$t->run(http => $http, wait_ports => [$t->port, $t->port2]);

my (%doc, %file);
for my $v (qw(v1 v2 v3)) {
    my $r = $t->req(GET => "/openapi.json?version=$v");
    is $r->{status}, 200, "$v: 200";
    like $r->{headers}{'content-type'}, qr{^application/json}, "$v: JSON";
    $doc{$v} = $r->{json};
    my $file = $file{$v} = $t->prefix . "/openapi-$v.json";
    open my $fh, '>', $file or die $!;
    print $fh $r->{content};
    close $fh;
}
# one node process validates the three documents: a line "FILE: valid VERSION" or "FILE: INVALID ..."
# each, exit status 1 if any is invalid
SKIP: {
    skip "OpenAPI validator: $no_validator", 7 if $no_validator;
    my $out = `node $validator @file{qw(v1 v2 v3)} 2>&1`;
    is $?, 0, 'the validator accepts every document' or diag $out;
    for my $v (qw(v1 v2 v3)) {
        my ($line) = grep { index($_, "$file{$v}: ") == 0 } split /\n/, $out;
        like $line // '', qr/: valid /, "$v: the validator accepts the document" or diag $out;
        like $line // '', qr/valid 3\.1/, "$v: validated as OpenAPI 3.1";
    }
}

my $p3 = $doc{v3}{paths};
is $doc{v3}{openapi}, '3.1.0', 'openapi 3.1.0';
is $doc{v3}{info}{version}, 'v3', 'info.version names the version';
is $doc{v3}{info}{title}, 'Test API', 'title from the directive';
is_deeply [sort keys %$p3], ['/', '/orders', '/orders/{id}/lines/{line}', '/users', '/users/{id}'],
    'v3 lists its own and every inherited route';
is $p3->{'/orders'}{get}{'x-answered-by-version'}, 'v3', 'own route marked v3';
is $p3->{'/users/{id}'}{get}{'x-answered-by-version'}, 'v2', 'GET /users/{id} answered by v2';
ok !exists $p3->{'/users/{id}'}{get}{'x-controller'}, 'no internal location name by default';
is $t->req(GET => '/openapi-internal.json?version=v3')->{json}{paths}{'/users/{id}'}{get}{'x-controller'}, '@users_v2',
    '... controllers=on names the controller';
is_deeply [map { $_->{url} } @{ $doc{v3}{servers} }], ['/api/v3'], 'servers: the mount and the version (path strategy)';
is_deeply [map { $_->{url} } @{ $doc{v1}{servers} }], ['/api/v1', '/api'], '... and the bare mount for the default version';
my %ids;
for my $path (values %$p3) { $ids{$_->{operationId}}++ for values %$path }
is scalar(grep { $_ > 1 } values %ids), 0, 'operationIds are unique';
ok $ids{get_users_id}, '... and readable (get_users_id)';
is $p3->{'/users'}{get}{responses}{'4XX'}{content}{'application/json'}{schema}{'$ref'}, '#/components/schemas/RouterError',
    'the router\'s own errors are described';
SKIP: {
    skip "redocly: $no_redocly", 1 if $no_redocly;
    my ($st, $out) = redocly_lint(@file{qw(v1 v2 v3)});
    is $st, 0, 'redocly lint (recommended rules) passes on every document' or diag $out;
}
is $p3->{'/users'}{post}{'x-answered-by-version'}, 'v1', 'POST /users answered by v1';
is_deeply [map { $_->{name} } @{ $p3->{'/orders/{id}/lines/{line}'}{get}{parameters} }], ['id', 'line'],
    'path parameters in order';
is $p3->{'/orders/{id}/lines/{line}'}{get}{parameters}[0]{in}, 'path', 'in: path';
ok !exists $doc{v1}{paths}{'/orders'}, 'v1 does not list newer routes';
ok !exists $doc{v1}{paths}{'/users/{id}'}{delete}, 'v1 has no DELETE /users/{id}';
ok $doc{v2}{paths}{'/users/{id}'}{delete}{deprecated}, 'operations of a deprecated version are deprecated';
is $doc{v2}{info}{'x-sunset'}, 'Thu, 31 Dec 2026 00:00:00 GMT', 'the sunset date is in info';

my $r = $t->req(GET => '/openapi.json');
is $r->{json}{info}{version}, 'v1', 'no version argument: the default version';
$r = $t->req(GET => '/openapi.json?version=v9');
is $r->{status}, 404, 'unknown version: 404';
is_deeply $r->{json}, {error => 'unknown API version v9', code => 'unknown_api_version'}, 'unknown version body';
$r = $t->req(POST => '/openapi.json', json => {});
is $r->{status}, 405, 'POST: 405';
is $r->{headers}{allow}, 'GET, HEAD', 'Allow: GET, HEAD';
$t->done;

my $n = SigninTest->new;
$n->run(http => group_http(strategy => 'header x-api-version'), wait_ports => [$n->port, $n->port2]);
$r = $n->req(GET => '/openapi.json');
is $r->{status}, 400, 'no version argument and no default: 400';
is $r->{json}{error}, 'missing API version', 'missing body';
$r = $n->req(GET => '/openapi.json?version=v2');
is $r->{json}{info}{version}, 'v2', 'explicit version without a default';
my $op = $r->{json}{paths}{'/users/{id}'}{get};
my ($hp) = grep { $_->{in} eq 'header' } @{ $op->{parameters} };
is $hp->{name}, 'x-api-version', 'header strategy: the version header is a parameter';
ok $hp->{required}, '... required without a default version';
is_deeply $hp->{schema}{enum}, ['v2'], '... naming the version';
is_deeply [map { $_->{url} } @{ $r->{json}{servers} }], ['/api'], '... one server: the mount';
SKIP: {
    skip "redocly: $no_redocly", 1 if $no_redocly;
    my $file = $n->prefix . '/openapi-header.json';
    open my $fh, '>', $file or die; print $fh $r->{content}; close $fh;
    my ($st, $out) = redocly_lint($file);
    is $st, 0, 'redocly lint passes on the header strategy\'s document' or diag $out;
}
$n->done;

done_testing;
