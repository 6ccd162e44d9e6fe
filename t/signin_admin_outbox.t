# signin-admin outbox: what waits in the outbox while the mail API refuses it, with the reason of
# its last failure; never a code, token or body. The address and purpose are sealed: shown with
# the key file, "?" without it.
use strict; use warnings;
use Test::More;
use JSON::PP;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
plan skip_all => 'signin-admin is not built' unless $ENV{SIGNIN_ADMIN} && -x $ENV{SIGNIN_ADMIN};
# a mail API that refuses everything with a 503: each email is tried again, 1 s then doubling
my $mailer = SigninTest::Mailer->new(port => $t->port2, statuses => [503]);
$t->run(http => qq{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_registration on;
    signin_token_resend 0;
    signin_limits off;
    signin_delivery /_signin/deliver;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/send;
        }
    }
});

my ($rc, $out) = $t->admin_text('outbox');
is $rc, 0, 'an empty outbox' or diag $out;
like $out, qr/^\(none\)$/m, 'says so';

is $t->req(POST => '/auth/register', json => { email => 'waits@example.com' })->{status}, 202, 'register: 202';
ok $t->wait_for(sub { grep { $_->{email} eq 'waits@example.com' } $mailer->emails }, timeout => 5),
    'the mail API was asked (and refused)';
my @tokens = map { ($_->{token} // '', $_->{code} // '') } $mailer->emails;

# the first failure is recorded a moment after the mailer's answer
my @rows;
ok $t->wait_for(sub {
    my ($rc2, $json) = $t->admin('outbox');
    @rows = map { decode_json($_) } grep { /^\{/ } split /\n/, $json;
    @rows == 1 && defined $rows[0]{last_error};
}, timeout => 5), 'signin-admin outbox --json: one email, with its last error' or diag explain \@rows;
my $row = $rows[0];
is $row->{email}, 'waits@example.com', 'its address';
is $row->{purpose}, 'registration', 'its purpose';
cmp_ok $row->{tries}, '>=', 2, 'tries: the sends started (the failed one and the next)';
is $row->{last_error}, 'the delivery location answered 503', 'the last error: the mail API\'s status';
like $row->{next_try_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, 'the next try, a time';
like $row->{created_at}, qr/^\d{4}-\d\d-\d\dT/, 'when it was written';
is_deeply [sort keys %$row], [sort qw(email purpose tries next_try_at takeover_at created_at last_error)],
    'those fields, no other';

($rc, $out) = $t->admin_text('outbox');
is $rc, 0, 'the table' or diag $out;
like $out, qr/^EMAIL\s+PURPOSE\s+TRIES\s+NEXT TRY\s+CREATED\s+LAST ERROR$/m, 'its head';
like $out, qr/^waits\@example\.com\s+registration\s+\d+\s+\S+\s+\S+\s+the delivery location answered 503$/m, 'its row';
for my $secret (grep { length } @tokens) {
    unlike $out, qr/\Q$secret\E/, 'no token or code in the table';
}

# without the key file: the rest, and a note
($rc, $out) = $t->admin_text('outbox', '--key', $t->prefix . '/no-such.key');
is $rc, 0, 'without the key file it still lists' or diag $out;
like $out, qr/^\?\s+\?\s+\d+\s+.*the delivery location answered 503$/m, 'address and purpose unknown';
like $out, qr/addresses and purposes are not shown/, 'and says why';

$t->done;
done_testing;
