# Events for the application (signin_events): every POST the module makes is checked by the
# application's side with the standardwebhooks package (the Standard Webhooks reference library),
# which must accept it under the configured secret and refuse it under another. A refused event
# is tried again with the same webhook-id; a user's later event never overtakes an earlier one
# that waits for its retry; an event whose sender was killed is sent by another worker; no body
# holds a secret; signin-admin's changes are events and `signin-admin events` shows what waits;
# nginx -t refuses what cannot work.
use strict; use warnings;
use Test::More;
use IO::Select;
use POSIX ();
use File::Copy ();
use Time::HiRes qw(time sleep);
use lib 't/lib'; use SigninTest;

my $root = $ENV{SIGNIN_ROOT} || '.';
plan skip_all => 'node is not installed' unless SigninTest::which('node');
plan skip_all => "t/node_modules has no standardwebhooks (cd t && npm ci)"
    unless -f "$root/t/node_modules/standardwebhooks/package.json";

my $SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
my $WRONG = 'whsec_' . 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQQ==';

# The receiver (t/tools/webhook_receiver.mjs) on a port; its log of what it got.
package Receiver {
    sub new {
        my ($class, %o) = @_;
        my $log = File::Temp::tempdir(CLEANUP => 1) . '/events.log';
        open my $touch, '>>', $log or die "$log: $!";
        close $touch;
        my $pid = open(my $out, '-|') // die "fork: $!";
        if ($pid == 0) {
            $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP PIPE);
            exec 'node', "$root/t/tools/webhook_receiver.mjs", '--port', $o{port}, '--secret', $SECRET,
                '--wrong-secret', $WRONG, '--log', $log or POSIX::_exit(127);
        }
        my $line = '';
        my $sel = IO::Select->new($out);
        my $deadline = Time::HiRes::time() + 30;
        while (Time::HiRes::time() < $deadline && $line !~ /\n/) {
            next unless $sel->can_read(0.1);
            sysread($out, $line, 64, length $line) or last;
        }
        die "the webhook receiver did not start: $line\n" unless $line =~ /^ready/;
        return bless { pid => $pid, out => $out, log => $log, port => $o{port}, owner => $$ }, $class;
    }
    # Every POST it got, oldest first, each with its body decoded into {type, timestamp, data}.
    sub got {
        my ($self) = @_;
        return map {
            my $l = $SigninTest::JSON->decode($_);
            $l->{event} = eval { $SigninTest::JSON->decode($l->{body}) } // {};
            $l;
        } grep { /\S/ } SigninTest::read_lines($self->{log});
    }
    sub answer {
        my ($self, %o) = @_;
        my $r = HTTP::Tiny->new->post("http://127.0.0.1:$self->{port}/_test/answer",
            { content => $SigninTest::JSON->encode({ statuses => $o{statuses} // [], hang => $o{hang} // 0 }) });
        die "receiver control: $r->{status}" unless $r->{success};
    }
    sub stop {
        my ($self) = @_;
        return unless $self->{pid} && $self->{owner} == $$;
        kill 'TERM', $self->{pid};
        waitpid $self->{pid}, 0;
        delete $self->{pid};
    }
    sub DESTROY { $_[0]->stop }
}

sub conf {
    my ($t, %o) = @_;
    return $t->signin_http(
        extra => qq{
            signin_token_resend 0;
            signin_limits off;
            signin_delivery_timeout @{[ $o{hold} // '3s' ]};
            signin_events /_signin/events;
            signin_events_secret_file %%PREFIX%%/events.secret;
            @{[ $o{extra} // '' ]}
        },
        locations => q{
            location = /_signin/events {
                internal;
                proxy_read_timeout 30s;
                proxy_pass http://127.0.0.1:%%PORT3%%/events;
            }
            location = /metrics { signin_metrics; }
        });
}

sub write_secret {
    my ($t, $text) = @_;
    open my $f, '>', $t->prefix . '/events.secret' or die $!;
    print $f $text;
    close $f;
}

# Registers an address and signs in: its cookie pair.
sub sign_up {
    my ($t, $email) = @_;
    my $r = $t->req(POST => '/auth/register', json => { email => $email });
    die "register: $r->{status}" unless $r->{status} == 202;
    my $m = $t->last_email($email) or die "no email for $email";
    $r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $t->origin });
    die "session: $r->{status}" unless $r->{status} == 200;
    return (SigninTest::set_cookie_pair($r), $m->{token});
}

sub of_user {
    my ($user_id, @got) = @_;
    return grep { ($_->{event}{data}{user_id} // '') eq $user_id } @got;
}

# ================================================================ nginx -t
{
    my $t = SigninTest->new;
    my $conf = conf($t);
    write_secret($t, "not a secret\n");
    my ($rc, $out) = $t->nginx_t(http => $conf);
    isnt $rc, 0, 'nginx -t refuses a secret file without whsec_';
    like $out, qr/signin_events_secret_file .* does not hold a Standard Webhooks secret/, '... and says why';
    write_secret($t, "whsec_c2hvcnQ=\n");
    ($rc, $out) = $t->nginx_t(http => $conf);
    like $out, qr/24 to 64 bytes/, 'nginx -t refuses a key too short';
    unlink $t->prefix . '/events.secret';
    ($rc, $out) = $t->nginx_t(http => $conf);
    like $out, qr/cannot be read/, 'nginx -t refuses a missing secret file';
    write_secret($t, "$SECRET\n");
    ($rc, $out) = $t->nginx_t(http => $conf);
    is $rc, 0, 'nginx -t takes a whsec_ secret' or diag $out;
    ($rc, $out) = $t->nginx_t(http => conf($t, extra => 'signin_events_types user.created user.made;'));
    like $out, qr/"user.made" is no event type/, 'nginx -t refuses an unknown event type';
    (my $open = $conf) =~ s/internal;\n\s*proxy_read_timeout/proxy_read_timeout/;
    ($rc, $out) = $t->nginx_t(http => $open);
    like $out, qr/signin_events location "\/_signin\/events" is not "internal"/, 'nginx -t refuses a location anyone can post to';
    (my $none = $conf) =~ s/signin_events_secret_file [^;]*;//;
    ($rc, $out) = $t->nginx_t(http => $none);
    like $out, qr/signin_events needs "signin_events_secret_file"/, 'nginx -t wants the secret';
}

# ================================================================ signed, in order, retried, no secret
{
    my $t = SigninTest->new;
    write_secret($t, "$SECRET\n");
    my $app = Receiver->new(port => $t->port3);
    $t->run(http => conf($t));

    my ($cookie, $token) = sign_up($t, 'ann@example.com');
    my $me = $t->req(GET => '/auth/me', headers => { cookie => $cookie })->{json};
    my $uid = $me->{id} // $me->{user}{id};
    ok $uid, 'signed up' or diag explain $me;
    my @got = @{ $t->wait_for(sub { my @g = of_user($uid, $app->got); @g >= 2 ? \@g : undef }, timeout => 10) // [] };
    is_deeply [map { $_->{event}{type} } @got], ['user.created', 'session.created'], 'user.created, then session.created';
    is scalar(grep { $_->{verified} } @got), scalar @got, 'standardwebhooks verifies every signature'
        or diag explain [map { $_->{why} } @got];
    is scalar(grep { $_->{wrong_key_refused} } @got), scalar @got, '... and refuses it under another key';
    is $got[0]{event}{data}{email}, 'ann@example.com', 'user.created names the address';
    is $got[1]{event}{data}{method}, 'email', 'session.created says the way in';
    ok defined $got[1]{event}{data}{user_agent} && exists $got[1]{event}{data}{client}, '... the browser and the client';
    like $got[0]{id}, qr/^msg_[A-Za-z0-9_-]{22}$/, 'a webhook-id';
    ok abs($got[0]{timestamp} - time) < 30, 'webhook-timestamp is now';

    # retries after 500s keep the webhook-id, and the user's next event waits for them
    $app->answer(statuses => [500, 500]);
    my $t0 = time;
    my ($rc, $out) = $t->admin_text('role', 'add', 'ann@example.com', 'staff');
    is $rc, 0, 'signin-admin role' or diag $out;
    ($rc, $out) = $t->admin_text('suspend', 'ann@example.com');
    is $rc, 0, 'signin-admin suspend' or diag $out;
    my @more = @{ $t->wait_for(sub {
        my @g = of_user($uid, $app->got);
        (grep { ($_->{event}{type} // '') eq 'user.suspended' } @g) ? [@g[2 .. $#g]] : undef;
    }, timeout => 15) // [] };
    is_deeply [map { [$_->{event}{type}, $_->{status}] } @more],
        [['user.roles_changed', 500], ['user.roles_changed', 500], ['user.roles_changed', 204], ['user.suspended', 204]],
        "signin-admin's changes are events; the second waits while the first is retried"
        or diag explain [map { [$_->{event}{type}, $_->{status}] } @more];
    is scalar(keys %{ { map { $_->{id} => 1 } @more[0 .. 2] } }), 1, 'the same webhook-id at every try';
    ok time - $t0 >= 2.5, 'retried after 1 s, then 2 s';
    is_deeply $more[2]{event}{data}{roles}, ['staff'], 'user.roles_changed has the roles';
    is scalar(grep { $_->{verified} && $_->{wrong_key_refused} } @more), scalar @more, 'every try is signed anew';

    # no secret in any body: not the webhook secret, not the session, not the code
    my ($cookie_value) = $cookie =~ /=(.*)/;
    my @bodies = map { $_->{body} } $app->got;
    (my $b64 = $SECRET) =~ s/^whsec_//;
    is scalar(grep { index($_, $b64) >= 0 || index($_, $cookie_value) >= 0 || index($_, $token) >= 0 } @bodies), 0,
        'no body holds the secret, the session or the code';

    # signin-admin events: what waits, while the application refuses
    $app->answer(statuses => [(503) x 50]);
    ($rc, $out) = $t->admin_text('unsuspend', 'ann@example.com');
    my $waiting = $t->wait_for(sub {
        my ($c, $o) = $t->admin('events');
        $o =~ /"type":"user.unsuspended".*"last_error":"the events location answered 503"/ ? $o : undef;
    }, timeout => 10);
    ok $waiting, 'signin-admin events shows the event, its tries and the last error' or diag $waiting;
    unlike $waiting // '', qr/whsec_|$b64/, '... and no secret';
    $app->answer(statuses => []);
    ok $t->wait_for(sub { grep { ($_->{event}{type} // '') eq 'user.unsuspended' && $_->{status} eq '204' } $app->got },
        timeout => 10), 'delivered once the application takes it';

    my $m = $t->req(GET => '/metrics')->{content};
    like $m, qr/^signin_events_total\{type="user.roles_changed",result="retried"\} 2$/m, 'metrics count the retries';
    like $m, qr/^signin_events_total\{type="user.created",result="sent"\} 1$/m, '... and the sends, per type';

    # a worker killed between the change and the end of the send: another worker sends it
    $app->answer(hang => 1);
    my $r = $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, origin => $t->origin });
    ok $r->{status} == 200 || $r->{status} == 204, 'logout';
    my $hung = $t->wait_for(sub { (grep { $_->{status} eq 'hung' } $app->got)[0] }, timeout => 10);
    ok $hung, 'the send is under way';
    kill 'KILL', $_ for $t->worker_pids;
    my $after = $t->wait_for(sub { (grep { $_->{id} eq ($hung->{id} // '') && $_->{status} eq '204' } $app->got)[0] },
        timeout => 15);
    ok $after, 'the event is sent again, with its webhook-id, after the worker died';
    is $after->{event}{type}, 'session.ended', '... session.ended';
    is $after->{event}{data}{reason}, 'logout', '... for a logout';
    $t->done(allow => qr/\[alert\].* worker process \d+ exited on signal 9$/);
    $app->stop;
}

# ================================================================ chosen types, dropped after the retries
{
    my $t = SigninTest->new;
    write_secret($t, "$SECRET\n");
    my $app = Receiver->new(port => $t->port3);
    $t->run(http => conf($t, extra => "signin_events_types user.created user.suspended;\nsignin_events_retries 1;"));
    $app->answer(statuses => [500, 500]);
    sign_up($t, 'bob@example.com');
    ok $t->wait_for(sub { my @g = $app->got; @g >= 2 }, timeout => 10), 'two tries';
    my ($rc, $out) = $t->admin_text('suspend', 'bob@example.com');
    my @got = @{ $t->wait_for(sub { my @g = $app->got; @g >= 3 ? \@g : undef }, timeout => 10) // [] };
    is_deeply [map { [$_->{event}{type}, $_->{status}] } @got],
        [['user.created', 500], ['user.created', 500], ['user.suspended', 204]],
        'only the chosen types; dropped after 1 retry, then the next one goes'
        or diag explain [map { [$_->{event}{type}, $_->{status}] } @got];
    ($rc, $out) = $t->admin('audit', '--kind', 'event.dropped');
    like $out, qr/user\.created msg_/, 'the drop is audited';
    like $t->req(GET => '/metrics')->{content}, qr/^signin_events_total\{type="user.created",result="dropped"\} 1$/m,
        'and counted';
    $t->done(allow => qr/event msg_\S+ \(user.created\) dropped/);
    $app->stop;
}

# ================================================================ held as written, deleted with a later batch
{
    my $t = SigninTest->new;
    write_secret($t, "$SECRET\n");
    my $app = Receiver->new(port => $t->port3);
    # one worker: the deletions ride that worker's own next batch, which a request to another
    # worker would not start
    $t->run(http => conf($t), workers => 1);
    my $step = sub {
        my ($name) = @_;
        my ($n) = $t->req(GET => '/metrics')->{content} =~ /^signin_event_steps_total\{step="$name"\} (\d+)$/m;
        return $n // -1;
    };
    # the events of the account made for an address, once both of its sign-up's are in
    my $both = sub {
        my ($email) = @_;
        return $t->wait_for(sub {
            my ($made) = grep { ($_->{event}{data}{email} // '') eq $email } $app->got;
            my @g = $made ? of_user($made->{event}{data}{user_id}, $app->got) : ();
            @g >= 2 ? \@g : undef;
        }, timeout => 10, interval => 0.002);
    };

    # a sign-in's events go to the application without a claim, and leave the store by themselves
    sign_up($t, 'cy@example.com');
    ok $both->('cy@example.com'), "a sign-in's two events are sent";
    # (on PostgreSQL too: the batch holds the events' lock, so no node writes an event beside it)
    is $step->('held_as_written'), 2, '... held as their batch wrote them';
    is $step->('claimed'), 0, '... no claim';
    ok $t->wait_for(sub { my ($c, $o) = $t->admin('events'); $o !~ /msg_/ }, timeout => 5),
        'delivered events are deleted with no write coming after them';
    ok $step->('deleted_alone') >= 1, '... by a write of their own';

    # the deletion of delivered events rides the next write batch, one that comes within the
    # 0.1 s they wait for it: a write sent as soon as the worker counts them sent (the moment
    # they join its deletions). A busy machine may take longer now and then: a few tries.
    my $sent = sub {
        my $n = 0;
        $n += $_ for $t->req(GET => '/metrics')->{content} =~ /^signin_events_total\{[^}]*result="sent"\} (\d+)$/mg;
        return $n;
    };
    my ($rode, $tries) = (0, 0);
    for my $i (1 .. 10) {
        $tries = $i;
        my $before = $sent->();
        sign_up($t, "rider$i\@example.com");
        my $until = Time::HiRes::time() + 10;
        Time::HiRes::sleep(0.002) while $sent->() < $before + 2 && Time::HiRes::time() < $until;
        $t->req(POST => '/auth/register', json => { email => "later$i\@example.com" });
        last if ($rode = $step->('deleted_with_batch')) > 0;
    }
    ok $rode > 0, 'delivered events are deleted by the next write batch';
    note "the deletion rode a write batch at try $tries";

    # a user whose event waits for a retry: the events written after it wait behind it
    $app->answer(statuses => [500]);
    my ($dave) = sign_up($t, 'dave@example.com');
    my $r = $t->req(POST => '/auth/logout', json => {}, headers => { cookie => $dave, origin => $t->origin });
    ok $r->{status} == 200 || $r->{status} == 204, 'logout while the first event waits for its retry';
    my @got = @{ $t->wait_for(sub {
        my ($made) = grep { ($_->{event}{data}{email} // '') eq 'dave@example.com' } $app->got;
        my @g = $made ? of_user($made->{event}{data}{user_id}, $app->got) : ();
        @g >= 4 ? \@g : undef;
    }, timeout => 15) // [] };
    is_deeply [map { [$_->{event}{type}, $_->{status}] } @got],
        [['user.created', 500], ['user.created', 204], ['session.created', 204], ['session.ended', 204]],
        "the user's later events, held or not, go after the retry, in order"
        or diag explain [map { [$_->{event}{type}, $_->{status}] } @got];
    ok $step->('claimed') >= 3, '... claimed once the first failed';
    $t->done;
    $app->stop;
}

# ================================================================ PostgreSQL: two nodes, each user's events in order
# Two nginx nodes share the store. Four users at once, each in a process of its own: it signs in on
# one node, signin-admin (a third writer, outside any batch) gives it a role, it signs out on the
# other node, the role goes; five rounds, the nodes swapping. The application refuses one POST in
# three with a 500 at first, so events wait for their retries while the next ones are written.
# Each user's events must reach it in the order of the changes, whichever node or tool wrote them
# and whether a batch held them or the claims sent them.
SKIP: {
    skip 'two nodes share a store on PostgreSQL only', 5 unless $ENV{SIGNIN_TEST_PG};
    my @nodes = (SigninTest->new, SigninTest->new);
    my $app = Receiver->new(port => $nodes[0]->port3);
    write_secret($_, "$SECRET\n") for @nodes;
    $nodes[0]->run(http => conf($nodes[0], hold => '2s'));
    $nodes[1]{pg_store} = $nodes[0]->store_url;
    File::Copy::copy($nodes[0]->key_file, $nodes[1]->key_file) or die "copy the key: $!";
    chmod 0600, $nodes[1]->key_file;
    (my $conf2 = conf($nodes[1], hold => '2s')) =~ s/%%PORT3%%/@{[$nodes[0]->port3]}/g;
    $nodes[1]->run(http => $conf2);
    $app->answer(statuses => [map { $_ % 3 ? 204 : 500 } 1 .. 30]);
    my @emails = map { "order$_\@example.com" } 1 .. 4;
    my $rounds = 5;
    my @kids;
    for my $email (@emails) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my $ok = eval {
                for my $round (1 .. $rounds) {
                    my ($in, $out) = $round % 2 ? @nodes : reverse @nodes;
                    my $cookie = $in->sign_in($email);
                    my ($rc, $o) = $in->admin('role', 'add', $email, "r$round");
                    die "role add: $o" if $rc;
                    my $r = $out->req(POST => '/auth/logout', json => {}, headers => { cookie => $cookie, origin => $out->origin });
                    die "logout: $r->{status}" unless $r->{status} == 200 || $r->{status} == 204;
                    ($rc, $o) = $out->admin('role', 'remove', $email, "r$round");
                    die "role remove: $o" if $rc;
                }
                1;
            };
            print STDERR "# $email: $@" unless $ok;
            POSIX::_exit($ok ? 0 : 1);
        }
        push @kids, $pid;
    }
    my $failed = 0;
    for (@kids) { waitpid $_, 0; $failed++ if $? }
    is $failed, 0, "four users' changes, on two nodes and by signin-admin, all answered";
    my @want = ('user.created', map { ('session.created', 'user.roles_changed', 'session.ended', 'user.roles_changed') } 1 .. $rounds);
    my %delivered;    # user id => its events taken by the application, each webhook-id once
    my $all = $nodes[0]->wait_for(sub {
        %delivered = ();
        my (%seen, %user);
        for my $g ($app->got) {
            next unless $g->{status} >= 200 && $g->{status} < 300 && !$seen{ $g->{id} // '' }++;
            push @{ $delivered{ $g->{event}{data}{user_id} } }, $g;
        }
        my $done = grep { @$_ >= @want } values %delivered;
        $done >= @emails;
    }, timeout => 60, interval => 0.2);
    ok $all, 'every event reached the application' or diag explain { map { $_ => scalar @{ $delivered{$_} } } keys %delivered };
    my @wrong = grep { join(' ', map { $_->{event}{type} } @{ $delivered{$_} }) ne join(' ', @want) } keys %delivered;
    is scalar @wrong, 0, "each user's events in the order of its changes"
        or diag explain [map { [map { $_->{event}{type} } @{ $delivered{$_} }] } @wrong];
    my @roles_wrong;
    for my $u (keys %delivered) {
        my @roles = map { join ',', @{ $_->{event}{data}{roles} } } grep { $_->{event}{type} eq 'user.roles_changed' } @{ $delivered{$u} };
        push @roles_wrong, $u if join(' ', @roles) ne join(' ', map { ("r$_", '') } 1 .. $rounds);
    }
    is scalar @roles_wrong, 0, '... each role given, then taken, in turn';
    my $retried = grep { $_->{status} == 500 } $app->got;
    ok $retried > 0, "... with $retried sends refused and tried again";
    $_->done for @nodes;
    $app->stop;
}

done_testing;
