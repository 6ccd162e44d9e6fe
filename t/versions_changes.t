# Version changes against a legacy upstream that speaks only the newest version (v3): clients of
# every version send and receive their own shapes. The upstream here is a small loopback server
# that answers in v3's shape and reports in headers what it was sent (body, Accept-Encoding), so
# the request's forward migration is seen as the upstream saw it.
use strict;
use warnings;
use Test::More;
use IO::Socket::INET;
use IO::Compress::Gzip qw(gzip);
use IO::Uncompress::Gunzip qw(gunzip);
use POSIX ();
use SigninTest;

my $t = SigninTest->new;

# ---------------------------------------------------------------- the legacy upstream (v3 shapes)
my $user = '{"id": 7, "full_name": "Ada", "status": "enabled", "tier": "pro", "address": {"postcode": "N1"}}';
my $orders = '{"items": [{"code": "A1", "qty": 2}, {"code": "B2", "qty": 1}], "total": 3}';
my $big = '{"full_name": "' . ('x' x 5000) . '"}';
my %answers = (
    '/api/users/7'   => [200, 'application/json', $user],
    '/api/orders'    => [200, 'application/json; charset=utf-8', $orders],
    '/api/missing'   => [404, 'application/problem+json', '{"error": "no such user", "status": "enabled"}'],
    '/api/broken'    => [200, 'application/json', '{"full_name": "Ada", '],
    '/api/text'      => [200, 'text/plain', $user],
    '/api/chunked'   => [200, 'application/json', $user, 'chunked'],
    '/api/big'       => [200, 'application/json', $big, 'chunked'],
    '/api/big_known' => [200, 'application/json', $big],
);

sub serve {
    my ($listen, $answers) = @_;
    my $deadline = time + 600;    # bounded: it outlives no test
    while (time < $deadline) {
        my $c = $listen->accept or next;
        local $/ = "\r\n";
        my $line = <$c> // next;
        my ($method, $path) = split / /, $line;
        my %h;
        while (my $l = <$c>) {
            last if $l eq "\r\n";
            $l =~ s/\r\n\z//;
            my ($k, $v) = split /:\s*/, $l, 2;
            $h{lc $k} = $v;
        }
        my $body = '';
        read $c, $body, $h{'content-length'} if $h{'content-length'};
        my ($status, $type, $content, $chunked) = @{ $answers->{$path} // [404, 'application/json', '{"error": "?"}'] };
        if ($method eq 'POST') {    # creates the user it was sent, as v3 knows users
            ($status, $type) = (201, 'application/json');
            $content = $body =~ /^\{/ ? '{"id": 8, ' . substr($body, 1) : $body;
        }
        my $ae = $h{'accept-encoding'} // '';
        my @extra = ("X-Got-Body: $body", "X-Got-AE: [$ae]");
        if ($ae =~ /gzip/) {
            my $z;
            gzip(\$content => \$z);
            $content = $z;
            push @extra, 'Content-Encoding: gzip';
        }
        my $head = "HTTP/1.1 $status X\r\nContent-Type: $type\r\nConnection: close\r\n" . join('', map {"$_\r\n"} @extra);
        if ($chunked) {
            print $c $head, "Transfer-Encoding: chunked\r\n\r\n";
            for my $piece (unpack '(a1000)*', $content) {
                printf $c "%x\r\n%s\r\n", length $piece, $piece;
            }
            print $c "0\r\n\r\n";
        } else {
            print $c $head, 'Content-Length: ', length($content), "\r\n\r\n", $content;
        }
        close $c;
    }
}

# Starts the upstream on `port` with its answers; returns its pid.
sub upstream {
    my ($port, $answers) = @_;
    my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Listen => 64, ReuseAddr => 1)
        or die "upstream: listen: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
        serve($listen, $answers);
        POSIX::_exit(0);
    }
    close $listen;
    return $pid;
}
my @upstreams = (upstream($t->port2, \%answers));
END { kill 'TERM', @upstreams if @upstreams; }

# ---------------------------------------------------------------- the gateway
# v1 -> v2: "name" became "full_name", status "active" became "enabled", "tier" was added.
# v2 -> v3: "legacy" was removed (older versions still get true), the address's "zip" became
# "postcode", and on GET /orders each item's "sku" became "code".
my $gateway = <<'END';
    log_format bodies '$request_method $request_uri [$api_body_invalid]';
    api_versions {
        strategy header X-API-Version;
        default v3;
%%UPSTREAM_VERSION%%
        version v1 {
            controller @legacy {
                GET /users/:id; POST /users; GET /orders; GET /missing; GET /broken; GET /text;
                GET /chunked; GET /big; GET /big_known;
            }
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
        listen 127.0.0.1:%%PORT%%;
        api_versions_body_max 2k;
        access_log %%PREFIX%%/bodies.log bodies;
        gzip on;
        gzip_types application/json;
        gzip_min_length 1;
        location /api/ { api_versions_route; }
        location @legacy {
            proxy_http_version 1.1;
            proxy_pass http://127.0.0.1:%%PORT2%%;
        }
    }
END
$t->run(http => $gateway =~ s/%%UPSTREAM_VERSION%%\n//r, wait_ports => [$t->port]);

sub get {
    my ($version, $path, %o) = @_;
    my $via = $o{via} // $t;
    my %h = (%{ $o{headers} || {} }, ($version ? ('X-API-Version' => $version) : ()));
    return $via->req($o{method} // 'GET', $path, headers => \%h, (exists $o{json} ? (json => $o{json}) : ()),
        (exists $o{body} ? (body => $o{body}) : ()));
}

sub decode { my ($text) = @_; $SigninTest::JSON->decode($text) }

# ---------------------------------------------------------------- responses, every version
my $r = get('v3', '/api/users/7');
is $r->{content}, $user, 'v3, the upstream\'s own version: the body as sent, byte for byte';
$r = get('v2', '/api/users/7');
is_deeply decode($r->{content}),
    {id => 7, full_name => 'Ada', status => 'enabled', tier => 'pro', address => {zip => 'N1'}, legacy => JSON::PP::true},
    'v2: the address is back to zip, and the removed field is there with its value';
is $r->{headers}{'content-length'}, length($r->{content}), 'v2: Content-Length is the migrated body\'s';
$r = get('v1', '/api/users/7');
# what no change touched keeps its text, blanks and all ("id": 7); what changed is written without
is $r->{content}, '{"id": 7,"name":"Ada","status":"active","address":{"zip":"N1"},"legacy":true}',
    'v1: renamed, mapped, the added field gone; migrated one version at a time';
is $r->{headers}{'content-length'}, length($r->{content}), 'v1: Content-Length follows';

$r = get('v1', '/api/orders');
is_deeply decode($r->{content}), {items => [{sku => 'A1', qty => 2}, {sku => 'B2', qty => 1}], total => 3, legacy => JSON::PP::true},
    'an array\'s every element, on the route its change names';
is $r->{headers}{'content-type'}, 'application/json; charset=utf-8', 'the content type as the upstream sent it';

$r = get('v1', '/api/missing');
is $r->{status}, 404, 'an error keeps its status';
is_deeply decode($r->{content}), {error => 'no such user', status => 'active', legacy => JSON::PP::true},
    'an error body (application/problem+json) is migrated too';

$r = get('v1', '/api/chunked');
is_deeply decode($r->{content}), {id => 7, name => 'Ada', status => 'active', address => {zip => 'N1'}, legacy => JSON::PP::true},
    'a chunked answer is migrated';
is $r->{headers}{'content-length'}, length($r->{content}), '... and sent with its Content-Length';

$r = get('v1', '/api/text');
is $r->{content}, $user, 'a body that is not JSON by its type passes untouched';

# ---------------------------------------------------------------- gzip
$r = get('v1', '/api/users/7', headers => {'Accept-Encoding' => 'gzip'});
is $r->{headers}{'x-got-ae'}, '[]', 'a change applies: the upstream is not offered compression';
is $r->{headers}{'content-encoding'}, 'gzip', 'nginx\'s gzip still compresses for the client';
my $plain;
gunzip(\$r->{content} => \$plain);
is $plain, '{"id": 7,"name":"Ada","status":"active","address":{"zip":"N1"},"legacy":true}', '... the migrated body';
$r = get('v3', '/api/users/7', headers => {'Accept-Encoding' => 'gzip'});
is $r->{headers}{'x-got-ae'}, '[gzip]', 'no change applies: the upstream gets the client\'s Accept-Encoding';
gunzip(\$r->{content} => \$plain);
is $plain, $user, '... and its compressed answer passes as it is';

# ---------------------------------------------------------------- invalid JSON and body_max
$r = get('v1', '/api/broken');
is $r->{status}, 200, 'invalid JSON: no error';
is $r->{content}, '{"full_name": "Ada", ', '... the body passes untouched';
ok $t->wait_for(sub { $t->error_log =~ /api_versions: a response body is not JSON and passed unchanged/ }, timeout => 5),
    '... and it is logged';

$r = get('v1', '/api/big');
is $r->{content}, $big, 'a chunked body over api_versions_body_max passes untouched and whole';
$r = get('v1', '/api/big_known');
is $r->{content}, $big, 'a body whose Content-Length is over api_versions_body_max passes untouched';
is $r->{headers}{'content-length'}, length($big), '... with its Content-Length';

# ---------------------------------------------------------------- requests, forward
$r = get('v1', '/api/users', method => 'POST', json => '{"name": "Bob", "status": "active", "legacy": true}');
is $r->{status}, 201, 'a v1 POST';
is $r->{headers}{'x-got-body'}, '{"full_name":"Bob","status":"enabled","tier":"free"}',
    'the upstream got v3\'s shape: renamed, mapped, the default added, the removed field gone';
is_deeply decode($r->{content}), {id => 8, name => 'Bob', status => 'active', legacy => JSON::PP::true},
    'and the client its own shape back';

$r = get('v2', '/api/users', method => 'POST', json => '{"full_name": "Cy", "tier": "pro", "legacy": false}');
is $r->{headers}{'x-got-body'}, '{"full_name": "Cy", "tier": "pro"}', 'a v2 POST: only v3\'s change applies';

$r = get('v3', '/api/users', method => 'POST', json => '{"full_name": "Di",  "tier": "pro"}');
is $r->{headers}{'x-got-body'}, '{"full_name": "Di",  "tier": "pro"}', 'a v3 POST reaches the upstream as written';

$r = get('v1', '/api/users', method => 'POST', json => '{"name": "Bob",');
is $r->{headers}{'x-got-body'}, '{"name": "Bob",', 'a request body that is not JSON passes untouched';

$r = get('v1', '/api/users', method => 'POST', body => '{"name": "Bob"}', headers => {'Content-Type' => 'text/plain'});
is $r->{headers}{'x-got-body'}, '{"name": "Bob"}', 'a request body of another type passes untouched';

my $long = '{"name": "' . ('y' x 3000) . '"}';
$r = get('v1', '/api/users', method => 'POST', json => $long);
is $r->{headers}{'x-got-body'}, $long, 'a request body over api_versions_body_max passes untouched';

# $api_body_invalid names the body that was not JSON, for a log's count
sub logged {
    my ($line) = @_;
    return $t->wait_for(sub {
        open my $fh, '<', $t->prefix . '/bodies.log' or return 0;
        local $/;
        my $log = <$fh>;
        return index($log, "$line\n") >= 0;
    }, timeout => 5);
}
ok logged('GET /api/broken [response]'), '$api_body_invalid: "response" for an answer that is not JSON';
ok logged('POST /api/users [request,response]'),
    '$api_body_invalid: "request,response" for a request body that is not JSON (which the upstream echoed)';
ok logged('GET /api/users/7 []'), '$api_body_invalid: empty when the bodies were JSON';

$t->done(allow => qr/is not JSON and passed unchanged/);

# ---------------------------------------------------------------- an upstream that speaks v2
# Clients of the newer v3 are migrated back to it, and its answers forward.
my $t2 = SigninTest->new;
my $user2 = '{"id": 7, "full_name": "Ada", "status": "enabled", "tier": "pro", "address": {"zip": "N1"}, "legacy": true}';
push @upstreams, upstream($t2->port2, {'/api/users/7' => [200, 'application/json', $user2]});
$t2->run(http => $gateway =~ s/%%UPSTREAM_VERSION%%/        api_versions_upstream_version v2;/r, wait_ports => [$t2->port]);
is get('v2', '/api/users/7', via => $t2)->{content}, $user2, 'upstream v2, client v2: untouched';
is get('v3', '/api/users/7', via => $t2)->{content}, '{"id": 7, "full_name": "Ada", "status": "enabled", "tier": "pro","address":{"postcode":"N1"}}',
    'client v3: the answer migrated forward';
is get('v1', '/api/users/7', via => $t2)->{content}, '{"id": 7,"name":"Ada","status":"active","address": {"zip": "N1"}, "legacy": true}',
    'client v1: the answer migrated back';
$r = get('v3', '/api/users', via => $t2, method => 'POST', json => '{"full_name": "Eve", "address": {"postcode": "E1"}}');
is $r->{headers}{'x-got-body'}, '{"full_name": "Eve","address":{"zip":"E1"},"legacy":true}',
    'a v3 request migrated back to the upstream\'s v2';
$t2->done;
done_testing;
