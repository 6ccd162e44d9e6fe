# api_versions_schema: the upstream's own OpenAPI document (it speaks v3) becomes one document per
# version showing that version's own field names, and .../changes lists the changes. Each
# version's answers, taken through the module from an upstream that speaks only v3, validate
# against that version's document with Ajv (an independent JSON Schema 2020-12 validator) and not
# against the upstream's; @redocly/cli lints the generated documents.
use strict;
use warnings;
use Test::More;
use JSON::PP;
use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
my $no_ajv = SigninTest::missing_node_packages('ajv', 'ajv-formats');
my $no_redocly = SigninTest::missing_node_packages('@redocly/cli');
diag "skipping the body validation: $no_ajv" if $no_ajv;

my $t = SigninTest->new;
my $json = JSON::PP->new->canonical;

# ---------------------------------------------------------------- the upstream's own document (v3)
my $strict = sub { my (%o) = @_; {type => 'object', additionalProperties => JSON::PP::false, %o} };
my $upstream_doc = {
    openapi => '3.1.0',
    info    => {title => 'Legacy', version => '3', license => {name => 'MIT', identifier => 'MIT'}},
    servers => [{url => 'http://127.0.0.1/api'}],
    security => [],
    paths   => {
        '/users/{id}' => {get => {
            operationId => 'getUser', summary => 'One user', description => 'A user as the upstream knows it.',
            parameters => [{name => 'id', in => 'path', required => JSON::PP::true, schema => {type => 'string'}}],
            responses => {
                '200' => {description => 'the user', content => {'application/json' => {schema => {'$ref' => '#/components/schemas/User'}}}},
                '404' => {description => 'no such user', content => {'application/json' => {schema => {'$ref' => '#/components/schemas/Problem'}}}},
            }}},
        '/orders' => {get => {
            operationId => 'getOrders', summary => 'Orders',
            responses => {'200' => {description => 'the orders', content => {'application/json' => {schema => $strict->(
                required => ['items', 'total'],
                properties => {total => {type => 'integer'}, items => {type => 'array', items => $strict->(
                    required => ['code', 'qty'], properties => {code => {type => 'string'}, qty => {type => 'integer'}})}})}}}}}},
    },
    components => {schemas => {
        User => $strict->(
            required => [qw(id full_name status tier address)],
            properties => {
                id => {type => 'integer'}, full_name => {type => 'string'},
                status => {type => 'string', enum => [qw(enabled locked)]},
                tier => {type => 'string', enum => [qw(free pro)]},
                address => $strict->(required => ['postcode'], properties => {postcode => {type => 'string'}}),
            }),
        Problem => $strict->(required => ['error', 'status'],
            properties => {error => {type => 'string'}, status => {type => 'string', enum => [qw(enabled locked)]}}),
    }},
};
my $schema_file = $t->prefix . '/upstream-openapi.json';
open my $fh, '>', $schema_file or die $!;
print $fh $json->encode($upstream_doc);
close $fh;

my $http = <<'END';
    api_versions {
        strategy header X-API-Version;
        default v3;
        api_versions_schema %%PREFIX%%/upstream-openapi.json;   #here
        version v1 {
            controller @legacy { GET /users/:id; GET /orders; }
        }
        version v2 {
            field_renamed /name /full_name;
            value_mapped /status active enabled;
            field_added /tier 'default="free"';
        }
        version v3 {
            field_removed /legacy value=true;
            field_renamed /address/zip /address/postcode;
            field_renamed /items/*/sku /items/*/code on GET /orders;
        }
    }
    server {
        listen 127.0.0.1:%%PORT2%%;
        default_type application/json;
        location = /api/users/7 { return 200 '{"id": 7, "full_name": "Ada", "status": "enabled", "tier": "pro", "address": {"postcode": "N1"}}'; }
        location = /api/users/8 { return 404 '{"error": "no such user", "status": "locked"}'; }
        location = /api/orders { return 200 '{"items": [{"code": "A1", "qty": 2}, {"code": "B2", "qty": 1}], "total": 3}'; }
    }
    server {
        listen 127.0.0.1:%%PORT%%;
        location /api/ { api_versions_route; }
        location /openapi/ { api_versions_openapi "Legacy API"; }
        location @legacy { proxy_pass http://127.0.0.1:%%PORT2%%; }
    }
END
$t->run(http => $http, wait_ports => [$t->port, $t->port2]);

# ---------------------------------------------------------------- the documents
my (%doc, %file);
for my $v (qw(v1 v2 v3)) {
    my $r = $t->req(GET => "/openapi/?version=$v");
    is $r->{status}, 200, "$v: the document";
    $doc{$v} = $r->{json};
    $file{$v} = $t->prefix . "/openapi-$v.json";
    open my $out, '>', $file{$v} or die $!;
    print $out $r->{content};
    close $out;
}
sub user_schema { my ($v) = @_; $doc{$v}{paths}{'/users/{id}'}{get}{responses}{200}{content}{'application/json'}{schema} }
is user_schema('v3')->{'$ref'}, '#/components/schemas/User', 'v3 (the upstream\'s): the upstream\'s own schema, by reference';
is_deeply [sort keys %{ user_schema('v2')->{properties} }], [qw(address full_name id legacy status tier)],
    'v2: "legacy" is back, the address keeps its component\'s shape here';
is_deeply user_schema('v2')->{properties}{address}{properties}, {zip => {type => 'string'}}, 'v2: the address says "zip"';
is_deeply [sort keys %{ user_schema('v1')->{properties} }], [qw(address id legacy name status)],
    'v1: "name", no "tier"';
is_deeply user_schema('v1')->{properties}{status}{enum}, [qw(active locked)], 'v1: status "active", not "enabled"';
is $doc{v1}{paths}{'/users/{id}'}{get}{summary}, 'One user', 'the upstream\'s summary is kept';
ok $doc{v1}{paths}{'/users/{id}'}{get}{responses}{'4XX'}, 'the router\'s own 4XX stays';
is_deeply $doc{v1}{components}{schemas}{User}, $upstream_doc->{components}{schemas}{User},
    'the shared component itself stays the upstream\'s';

# ---------------------------------------------------------------- answers through the module
my @cases;
for my $v (qw(v1 v2 v3)) {
    for my $case (['/api/users/7', '/users/{id}', '200'], ['/api/users/8', '/users/{id}', '404'],
                  ['/api/orders', '/orders', '200']) {
        my ($uri, $path, $status) = @$case;
        my $r = $t->req(GET => $uri, headers => {'x-api-version' => $v});
        is $r->{status}, $status, "$v GET $uri: $status";
        push @cases, {name => "$v $uri", doc => $file{$v}, path => $path, method => 'get', status => $status,
                      media => 'application/json', body => $r->{json}};
        # the same answer against the upstream's own document: only v3's shape fits it
        push @cases, {name => "$v $uri against v3", doc => $file{v3}, path => $path, method => 'get',
                      status => $status, media => 'application/json', body => $r->{json}} if $v ne 'v3';
    }
}
is $cases[0]{body}{name}, 'Ada', 'v1 got its own field name (the migration ran)';
SKIP: {
    skip "Ajv: $no_ajv", 15 if $no_ajv;
    my $cases_file = $t->prefix . '/cases.json';
    open my $c, '>', $cases_file or die $!;
    print $c $json->encode(\@cases);
    close $c;
    my $out = `cd $root/t && node tools/openapi_body_check.mjs $cases_file 2>&1`;
    my %line = map { /^(\S+) (v\d \S+(?: against v3)?)/ ? ($2 => $1) : () } split /\n/, $out;
    for my $case (@cases) {
        my $want = $case->{name} =~ /against v3$/ ? 'FAIL' : 'ok';
        is $line{$case->{name}} // 'none', $want, "Ajv: $case->{name}: $want" or diag $out;
    }
}

# ---------------------------------------------------------------- the changes
my $r = $t->req(GET => '/openapi/changes');
is $r->{status}, 200, 'GET /openapi/changes';
like $r->{headers}{'content-type'}, qr{^application/json}, '... JSON';
is_deeply [map { $_->{version} } @{ $r->{json}{versions} }], [qw(v1 v2 v3)], '... every version, oldest first';
is_deeply $r->{json}{versions}[2]{changes}[2],
    {change => 'field_renamed', path => '/items/*/sku', new_path => '/items/*/code', on => {method => 'GET', route => '/orders'}},
    '... each change as configured';
is_deeply $r->{json}{versions}[1]{changes}[1], {change => 'value_mapped', path => '/status', old => 'active', new => 'enabled'},
    '... value_mapped with its values';
$r = $t->req(GET => '/openapi/changes?format=markdown');
is $r->{status}, 200, 'GET /openapi/changes?format=markdown';
like $r->{headers}{'content-type'}, qr{^text/markdown}, '... Markdown';
like $r->{content}, qr/\A# API changes\n\n## v3\n.*\n## v2\n.*- `\/name` renamed to `\/full_name`\n.*## v1\n/s,
    '... newest first, one line a change';

# ---------------------------------------------------------------- redocly lint
SKIP: {
    skip "redocly: $no_redocly", 1 if $no_redocly;
    my $out = `cd $root/t && node node_modules/\@redocly/cli/bin/cli.js lint --format=summary $file{v1} $file{v2} $file{v3} 2>&1`;
    is $? >> 8, 0, 'redocly lint (recommended rules) passes on the generated documents' or diag $out;
}

# ---------------------------------------------------------------- nginx -t
for my $bad (['{"openapi": "3.1.0"', 'is not JSON'], ['{"openapi": "3.1.0"}', 'has no "paths" object']) {
    my ($text, $message) = @$bad;
    open my $b, '>', $schema_file or die $!;
    print $b $text;
    close $b;
    my ($status, $out) = $t->nginx_t(http => $http);
    isnt $status, 0, "a schema that $message: nginx -t fails";
    open my $conf, '<', $t->prefix . '/nginx.conf' or die $!;
    my ($line, $at) = (0);
    while (<$conf>) { $line++; $at = $line if /#here/ }
    like $out, qr/\[emerg\].*\Q$message\E.* in \S*nginx\.conf:$at\b/, "... naming the document at the directive's line ($at)";
}

done_testing;
