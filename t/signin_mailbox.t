# The dev mailbox shows every sign-in code, so it answers loopback clients that name a loopback
# host only (issue #19 item 11): DNS rebinding (another site's name resolving to 127.0.0.1) and
# cross-site requests (a foreign Origin, a text/plain form POST) are refused.
# It answers scripts with JSON and browsers with a page that runs no script.
use strict; use warnings;
use Test::More;
use Digest::SHA qw(sha256_base64);
use Time::Local qw(timegm);
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http);
$t->request_token('box@example.com');

# HTTP::Tiny will not send another Host: these go raw; returns (status, body)
sub with_host {
    my ($method, $host, $path) = @_;
    $path //= '/_dev/mailbox';
    my $resp = $t->raw("$method $path HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n");
    my ($status) = $resp =~ m{^HTTP/1\.1 (\d+)};
    return ($status // 0, $resp);
}

my $r = $t->req(GET => '/_dev/mailbox');
is $r->{status}, 200, 'GET with Host 127.0.0.1:port';
is scalar @{ $r->{json}{emails} }, 1, '... lists the email';
is((with_host(GET => 'localhost:' . $t->port))[0], 200, 'Host localhost');
is((with_host(GET => '[::1]'))[0], 200, 'Host [::1]');

my ($status, $resp) = with_host(GET => 'rebind.attacker.example');
is $status, 403, 'a foreign Host (DNS rebinding) is refused';
like $resp, qr/"origin_mismatch"/, '... origin_mismatch';
unlike $resp, qr/box\@example/, '... and shows nothing';
is((with_host(GET => '127.0.0.1.attacker.example'))[0], 403, 'a name that only starts like a loopback address is refused');
is $t->req(GET => '/_dev/mailbox?html', headers => { origin => 'https://attacker.example' })->{status}, 403,
    'a foreign Origin is refused';

$r = $t->req(POST => '/_dev/mailbox', body => '{"email":"x@example.com"}', headers => { 'content-type' => 'text/plain' });
is $r->{status}, 415, 'a text/plain POST (a cross-site form) is refused';
$r = $t->req(POST => '/_dev/mailbox', json => { email => 'x@example.com' }, headers => { origin => 'https://attacker.example' });
is $r->{status}, 403, 'a JSON POST with a foreign Origin is refused';
is((with_host(DELETE => 'rebind.attacker.example'))[0], 403, 'so is a DELETE through a foreign Host');
is scalar(() = $t->mailbox), 1, 'the mailbox is unchanged';

$r = $t->req(POST => '/_dev/mailbox', json => { email => 'x@example.com' }, headers => { origin => $t->origin });
is $r->{status}, 204, 'a JSON POST from the loopback origin is kept';
is scalar(() = $t->mailbox), 2, '... and listed';
is((with_host(GET => 'rebind.attacker.example', '/_dev/mailbox?body=0'))[0], 403, 'an HTML body through a foreign Host is refused');

# ---------------------------------------------------------------- JSON for scripts, a page for browsers
my $html_accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';    # a navigation
sub page_or_json {
    my ($path, $accept, $method) = @_;
    my $r = $t->req($method // 'GET', $path, headers => { defined $accept ? (accept => $accept) : () });
    return ($r->{headers}{'content-type'} // '') =~ m{^text/html} ? 'page'
        : ($r->{headers}{'content-type'} // '') =~ m{^application/json} ? 'json' : "status $r->{status}";
}
is page_or_json('/_dev/mailbox'), 'json', 'no Accept: JSON';
is page_or_json('/_dev/mailbox', 'application/json'), 'json', 'Accept: application/json: JSON';
is page_or_json('/_dev/mailbox', '*/*'), 'json', 'Accept: */*: JSON';
is page_or_json('/_dev/mailbox', $html_accept), 'page', 'a browser navigation (Accept: text/html, ...): the page';
is page_or_json('/_dev/mailbox', 'TEXT/HTML'), 'page', '... in any case';
is page_or_json('/_dev/mailbox?json', $html_accept), 'json', '?json: JSON, even to a browser';
is page_or_json('/_dev/mailbox?html'), 'page', '?html: the page, whatever Accept says';
is page_or_json('/_dev/mailbox?html', 'application/json'), 'page', '... even application/json';
is page_or_json('/_dev/mailbox', $html_accept, 'HEAD'), 'page', 'HEAD as a browser: the page\'s headers';
is $t->req(GET => '/_dev/mailbox')->{headers}{vary}, 'Accept', 'the answer varies by Accept';

# ---------------------------------------------------------------- the page
$t->req(DELETE => '/_dev/mailbox');
$r = $t->req(GET => '/_dev/mailbox', headers => { accept => $html_accept });
like $r->{content}, qr/No email yet\. Ask for a code/, 'an empty mailbox says so, and how to ask for a code';

my $start = time;
my $first = $t->request_token('first@example.com');
my $older = $t->last_email('first@example.com');
select undef, undef, undef, 0.01;
$t->request_token('second@example.com');
my $newer = $t->last_email('second@example.com');
my $evil = {
    email   => 'x<script>@example.com',
    subject => 'Hi <script>alert(1)</script> & "you"',
    text    => "line one\n<script>alert(2)</script>\n" . ('x' x 400),
    html    => '<p style="color:red">Styled</p><script>alert(3)</script>',
    code    => '<b>C0DE</b>',
    link    => 'javascript:alert(4)',
};
$r = $t->req(POST => '/_dev/mailbox', json => $evil);
is $r->{status}, 204, 'a delivery with markup in every field is kept';
$t->req(POST => '/_dev/mailbox', json => { email => 'l@example.com', link => 'http://127.0.0.1/auth/#token=a&b="c"' });
$t->req(POST => '/_dev/mailbox', json => { email => 'at@example.com', received_at => 'given' });

my @list = $t->mailbox;
is scalar @list, 5, 'five emails';
like $_->{received_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "$_->{email}: received_at, ISO 8601 in UTC"
    for grep { $_->{email} ne 'at@example.com' } @list;
is $list[-1]{received_at}, 'given', 'a delivery that came with a received_at keeps it';
my $got = $t->req(GET => '/_dev/mailbox')->{content};
is scalar(() = $got =~ /"received_at"/g), 5, '... and gets no second one';
my ($y, $mo, $d, $h, $mi, $s) = $older->{received_at} =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/;
my $received = timegm($s, $mi, $h, $d, $mo - 1, $y);
ok abs($received - $start) <= 5, '... the time it was stored';
is $list[0]{token}, $first, 'the JSON list is oldest first, as before';
is $older->{token}, $first, '... with the delivery fields as they were';

$r = $t->req(GET => '/_dev/mailbox', headers => { accept => $html_accept });
my $page = $r->{content};
is $r->{status}, 200, 'the page';
is $r->{headers}{'cache-control'}, 'no-store', '... no-store';
is $r->{headers}{'referrer-policy'}, 'no-referrer', '... Referrer-Policy: no-referrer';
is $r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff';
my $csp = $r->{headers}{'content-security-policy'} // '';
like $csp, qr/^default-src 'none'; /, '... CSP: nothing by default';
like $csp, qr/frame-ancestors 'none'/, '... never framed';
like $csp, qr/base-uri 'none'/, '... no base';
like $csp, qr/form-action 'none'/, '... no form';
like $csp, qr/frame-src 'self'/, '... frames its own HTML bodies';
unlike $csp, qr/unsafe-inline|script-src/, '... no inline style or any script allowed';
my ($style) = $page =~ m{<style>(.*?)</style>}s;
my $hash = sha256_base64($style // '');
$hash .= '=' x ((4 - length($hash) % 4) % 4);
like $csp, qr/style-src 'sha256-\Q$hash\E';/, '... its one style element allowed by its hash';
is scalar(() = $page =~ /<style/g), 1, '... and no other';
unlike $page, qr/<script/i, 'the page has no script';
unlike $page, qr/\sstyle=|\son\w+=/i, '... no style or event attributes (CSP would refuse them)';
unlike $page, qr/srcdoc/, '... and no srcdoc (it would inherit this policy and lose the email\'s styles)';
like $page, qr/<meta name="viewport" content="width=device-width, initial-scale=1">/, 'a page for phones too';

my @subjects = $page =~ m{<span class="subject">(.*?)</span>}g;
is scalar @subjects, 5, 'every email listed';
like $page, qr/<span class="subject">\(no subject\)<\/span><span class="meta">to at\@example\.com.*?<span class="subject">\(no subject\)<\/span><span class="meta">to l\@example\.com.*?to x&lt;script&gt;\@example\.com.*?to second\@example\.com.*?to first\@example\.com/s,
    'newest first';
like $page, qr/<details open><summary><span class="subject">\(no subject\)<\/span><span class="meta">to at\@/, '... the newest open';
is scalar(() = $page =~ /<details open>/g), 1, '... the others closed';

my $hms = substr($newer->{received_at}, 11, 8);
my $date = substr($newer->{received_at}, 0, 10);
like $page, qr{to second\@example\.com · <span class="purpose">Registration</span> · <time datetime="\Q$newer->{received_at}\E">\Q$hms\E <small>\Q$date\E</small></time>},
    'to, purpose and the time received (UTC, HH:MM:SS and the date)';
like $page, qr{<p class="code">\Q$newer->{code}\E</p>}, 'the code, large and selected by one click';
like $style, qr/\.code\{[^}]*user-select:all/, '... (user-select: all)';
like $style, qr/\.code\{[^}]*monospace/, '... in monospace';
like $style, qr/pre\{[^}]*white-space:pre-wrap;overflow-wrap:anywhere/, 'text bodies wrap, long words too';
(my $text_html = $newer->{text}) =~ s/&/&amp;/g;
like $page, qr{<h2>Text</h2><pre>\Q$text_html\E</pre>}, 'the text body in a pre';

# escaping: every field of the posted email shows as text
like $page, qr{<span class="subject">Hi &lt;script&gt;alert\(1\)&lt;/script&gt; &amp; &quot;you&quot;</span>}, 'the subject escaped';
like $page, qr{<pre>line one\n&lt;script&gt;alert\(2\)&lt;/script&gt;\n}, 'the text escaped';
like $page, qr{<p class="code">&lt;b&gt;C0DE&lt;/b&gt;</p>}, 'the code escaped';
like $page, qr{<p class="link">javascript:alert\(4\)</p>}, 'a link that is not http(s) is shown, not linked';
like $page, qr{<p class="link"><a href="http://127\.0\.0\.1/auth/#token=a&amp;b=&quot;c&quot;" rel="noreferrer">}, 'a web link is linked, escaped';
unlike $page, qr/Styled/, 'the HTML body is not in the page';
my ($evil_seq) = $page =~ m{<article id="email-(\d+)"><details><summary><span class="subject">Hi &lt;script};
ok defined $evil_seq, 'each email has its number';
like $page, qr{<iframe sandbox src="\?body=$evil_seq" loading="lazy" title="The HTML body"></iframe>},
    '... its HTML body in an iframe sandboxed with no allow-* token';
unlike $page, qr/allow-/, '... (none anywhere)';

$r = $t->req(GET => "/_dev/mailbox?body=$evil_seq", headers => { accept => $html_accept });
is $r->{status}, 200, 'the HTML body';
like $r->{headers}{'content-type'}, qr{^text/html}, '... as html';
is $r->{content}, $evil->{html}, '... as it was delivered';
my $body_csp = $r->{headers}{'content-security-policy'} // '';
like $body_csp, qr/^default-src 'none'; /, '... with a policy: nothing by default (no script)';
like $body_csp, qr/; sandbox;/, '... sandboxed even when opened on its own';
like $body_csp, qr/style-src 'unsafe-inline'/, '... its inline styles render';
like $body_csp, qr/frame-ancestors 'self'/, '... framed only by the mailbox\'s own page';
unlike $body_csp, qr/script-src/, '... no script';
is $r->{headers}{'referrer-policy'}, 'no-referrer', '... no referrer';
is $r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff';
is $t->req(GET => '/_dev/mailbox?body=' . ($evil_seq + 100))->{status}, 404, 'an email the mailbox does not have: 404';
is $t->req(GET => '/_dev/mailbox?body=x')->{status}, 404, '... nor a number that is not one';
is $t->req(GET => '/_dev/mailbox?body=' . ($evil_seq + 1))->{status}, 404, 'an email without an HTML body: 404';
$t->req(DELETE => '/_dev/mailbox');
is $t->req(GET => "/_dev/mailbox?body=$evil_seq")->{status}, 404, 'after DELETE the bodies are gone too';

$t->done;
done_testing;
