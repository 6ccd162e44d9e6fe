# The client key is the value of signin_client; an empty value is the one bucket shared by every
# caller without a name (as the engine's operations without `_from` share one throttling bucket).
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
$t->run(http => q{
    signin_store %%STORE%%;
    signin_origin http://127.0.0.1:%%PORT%%;
    signin_delivery /_signin/deliver;
    signin_limits zone=signin:1m;
    signin_client $http_x_client;
    signin_limit_sensitive 3r/m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /auth/ { signin_api; }
        location = /_signin/deliver { internal; signin_dev_mailbox; }
    }
});
sub login { $t->req(POST => '/auth/login', json => { email => 'nobody@example.com' }, headers => { @_ }) }

is login()->{status}, 202, "unnamed caller $_ shares the bucket" for 1 .. 3;
is login()->{status}, 429, 'the 4th unnamed request is refused, whoever sent it';
is login('X-Client' => 'alice')->{status}, 202, 'a named client has a bucket of its own';
is login('X-Client' => 'alice')->{status}, 202, 'alice 2';
is login('X-Client' => 'bob')->{status}, 202, 'bob 1';
is login('X-Client' => 'alice')->{status}, 202, 'alice 3';
is login('X-Client' => 'alice')->{status}, 429, 'alice 4 is refused';
is login('X-Client' => 'bob')->{status}, 202, 'bob is not';
$t->done;
done_testing;
