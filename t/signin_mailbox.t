# The dev mailbox shows every sign-in code, so it answers loopback clients that name a loopback
# host only (issue #19 item 11): DNS rebinding (another site's name resolving to 127.0.0.1) and
# cross-site requests (a foreign Origin, a text/plain form POST) are refused.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => $t->signin_http);
$t->request_token('box@example.com');

# HTTP::Tiny will not send another Host: these go raw; returns (status, body)
sub with_host {
    my ($method, $host) = @_;
    my $resp = $t->raw("$method /_dev/mailbox HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n");
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

$t->done;
done_testing;
