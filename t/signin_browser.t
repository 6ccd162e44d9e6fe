# A person's walk through the demo sign-in page (examples/index.html) in a real browser:
# Debian's chromium driven by playwright-core (t/package.json), against nginx.conf.example's
# locations on a test port.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;
use JSON::PP;

my $root = $ENV{SIGNIN_ROOT} || '.';
# optional tools (build.sh installs them): without one this file is skipped, the run goes on
my $chromium = $ENV{CHROMIUM} || '/usr/bin/chromium';
plan skip_all => "no chromium at $chromium (build.sh installs Debian's; CHROMIUM=path names another)"
    unless -x $chromium;
if (my $why = SigninTest::missing_node_packages('playwright-core')) { plan skip_all => $why }
local $ENV{CHROMIUM} = $chromium;

my $t = SigninTest->new;
mkdir $t->prefix . '/html';
system('cp', "$root/examples/index.html", $t->prefix . '/html/index.html') == 0 or die;
$t->run(http => $t->signin_http(extra => q{signin_limits off;}, locations => q{
location /app/ {
    signin_require on;
    proxy_set_header X-User-Email $signin_user_email;
    proxy_pass http://127.0.0.1:%%PORT%%/_legacy/;
}
location /_legacy/ { default_type text/plain; return 200 "legacy app: hello $http_x_user_email\n"; }
location = / { root %%PREFIX%%/html; try_files /index.html =404; }
}));

my $shot = $t->prefix . '/signed-in.png';
my $out = `cd $root/t && node browser/signin.mjs ${\ $t->origin} $shot 2>&1`;
is $? >> 8, 0, 'the browser walk finished' or diag $out;
my ($line) = grep { /^\{/ } split /\n/, $out;
my $seen = eval { decode_json($line // '') } || {};
ok $seen->{signed_out_form}, 'a visitor sees the sign-in form';
like $seen->{status_after_request} // '', qr/on its way/, 'asking for a code says it is on its way';
ok $seen->{got_token}, 'the code reached the dev mailbox';
like $seen->{signed_in_as} // '', qr/^browser-\d+\@example\.com$/, 'after the code the page says who is signed in';
is_deeply $seen->{cookie}, { httpOnly => JSON::PP::true, secure => JSON::PP::true, sameSite => 'Lax', path => '/' },
    'the browser holds an HttpOnly, Secure, SameSite=Lax session cookie for /';
ok !$seen->{cookie_visible_to_script}, 'page scripts cannot read the session cookie';
like $seen->{legacy_app} // '', qr/legacy app: hello browser-\d+\@example\.com/, 'the protected legacy app knows the user';
is $seen->{after_logout_me}, 401, 'after signing out /auth/me answers 401';
is $seen->{after_logout_app}, 401, 'and the legacy app is closed again';
ok -s $shot, 'a screenshot of the signed-in page was taken';
$t->done;
done_testing;
