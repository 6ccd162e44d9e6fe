# The ready-made emails: every delivery carries a tagged email (subject, text, html);
# signin_email_template replaces one purpose's email, checked by nginx -t; signin_email_previews
# lists a preview of every email for an admin area.
use strict; use warnings;
use Test::More;
use lib 't/lib'; use SigninTest;

my $t = SigninTest->new;
my $dir = $t->prefix;
sub write_file {
    my ($name, $text) = @_;
    open my $fh, '>', "$dir/$name" or die "$name: $!";
    print $fh $text;
    close $fh;
    return "$dir/$name";
}

my $sign_in = write_file('sign_in.txt', "Subject: Your code for {{origin}}\n\nHello {{email}}!\nCode: {{token}}\nGood for {{minutes}} min.\n");
my $sign_in_html = write_file('sign_in.html', "<p>Hello {{email}}</p><p><b>{{token}}</b></p>");
my $changed = write_file('changed.txt', "Subject: Password changed\n\nYour password on {{origin}} was changed.\n");

$t->run(http => $t->signin_http(
    extra => qq{signin_token_ttl 15m;
    signin_passwords on;
    signin_email_template SignIn $sign_in $sign_in_html;
    signin_email_template auth.password_changed $changed;},
    locations => q{location = /admin/emails { allow 127.0.0.1; deny all; signin_email_previews; }},
));

# ---------------------------------------------------------------- deliveries
my $origin = $t->origin;
my $r = $t->req(POST => '/auth/register', json => { email => 'new@example.com' });
is $r->{status}, 202, 'register';
my $m = $t->last_email('new@example.com') or die 'no email';
is $m->{purpose}, 'Registration', 'a registration email';
is $m->{tag}, 'auth.registration', '... tagged auth.<purpose>';
is $m->{subject}, 'Confirm your address for 127.0.0.1:' . $t->port, '... the built-in subject, naming the site';
like $m->{text}, qr/\Q$m->{code}\E/, '... the text shows the code';
like $m->{text}, qr/valid for 15 minutes/, '... and how long it lasts (signin_token_ttl)';
like $m->{html}, qr/^<!doctype html>/, '... an html body';
like $m->{html}, qr/\Q$m->{code}\E/, '... showing the code';
unlike $m->{subject}, qr/\Q$m->{token}\E/, '... never in the subject';
ok exists $m->{link}, '... a link field';
# the link is the signin_api location's page with the token in the fragment, or "" without a link base
like $m->{link}, qr{^(?:|\Q$origin\E/auth/#token=\Q$m->{token}\E)$}, '... the page with the token in the fragment, or empty';
if (length $m->{link}) {
    like $m->{text}, qr/^Or open this link: \Q$m->{link}\E$/m, '... the text shows the link';
    like $m->{html}, qr/<a href="\Q$m->{link}\E"/, '... the html a button to it';
} else {
    unlike $m->{text}, qr/open this link/, '... no link line without a link base';
    unlike $m->{html}, qr/<a /, '... and no button';
}
$r = $t->req(POST => '/auth/session', json => { token => $m->{token} }, headers => { origin => $origin });
is $r->{status}, 200, 'its code signs in';

$t->req(POST => '/auth/login', json => { email => 'new@example.com' });
$m = $t->last_email('new@example.com', purpose => 'SignIn') or die 'no sign-in email';
is $m->{tag}, 'auth.sign_in', 'a sign-in email, tagged auth.sign_in';
is $m->{subject}, "Your code for $origin", '... from the custom template';
is $m->{text}, "Hello new\@example.com!\nCode: $m->{token}\nGood for 15 min.\n", '... every value in place';
is $m->{html}, "<p>Hello new\@example.com</p><p><b>$m->{token}</b></p>", '... and the custom html';
$r = $t->req(POST => '/auth/token', json => { token => $m->{token} });
is $r->{status}, 200, 'the custom email\'s code signs in';

$r = $t->req(GET => '/_dev/mailbox?html');
like $r->{headers}{'content-type'}, qr{^text/html}, 'the dev mailbox page is html';
like $r->{content}, qr/to new\@example\.com/, '... showing each email';

# ---------------------------------------------------------------- previews
$r = $t->req(GET => '/admin/emails');
is $r->{status}, 200, 'GET the previews';
is $r->{headers}{'cache-control'}, 'no-store', '... no-store';
my @p = @{ $r->{json}{emails} || [] };
is_deeply [map { $_->{purpose} } @p],
    [qw(SignIn Registration AlreadyRegistered EmailChange EmailChangeApproval EmailChanged PasswordChanged Invitation MfaLocked NewSignIn)],
    'one preview per purpose';
is_deeply [map { $_->{tag} } @p],
    [qw(auth.sign_in auth.registration auth.already_registered auth.email_change auth.email_change_approval
        auth.email_changed auth.password_changed auth.invitation auth.mfa_locked auth.new_sign_in)],
    '... with their tags';
is_deeply [map { $_->{custom} ? 1 : 0 } @p], [1, 0, 0, 0, 0, 0, 1, 0, 0, 0], '... saying which are custom';
is $p[0]{subject}, "Your code for $origin", '... rendered from the custom template';
like $p[0]{text}, qr/Code: PREVIEW-CODE-0000/, '... with a sample code, not a real one';
is $p[6]{text}, "Your password on $origin was changed.\n", '... the custom notice';
like $p[1]{text}, qr/A password was chosen/, '... the Registration preview shows the password note';
like $p[8]{subject}, qr/^The second factor of your .* account was locked$/, '... the MfaLocked notice, built in';
unlike $p[8]{text}, qr/PREVIEW-CODE/, '... with no code';
like $p[9]{subject}, qr/^New sign-in to your account on /, '... the NewSignIn notice, built in';
like $p[9]{text}, qr/Browser: Firefox 128 on Windows\n.*IP address: 203\.0\.113\.7/s, '... with sample facts';
like $p[9]{text}, qr/When: January 1, 2027 at 12:00.{1,3}AM UTC/, '... its time in words, in UTC';

$r = $t->req(GET => '/admin/emails?purpose=sign_in');
is $r->{status}, 200, 'one preview as HTML';
like $r->{headers}{'content-type'}, qr{^text/html}, '... text/html';
like $r->{headers}{'content-security-policy'}, qr/default-src 'none'/, '... which runs no script';
is $r->{content}, '<p>Hello someone@example.com</p><p><b>PREVIEW-CODE-0000</b></p>', '... the custom html';
$r = $t->req(GET => '/admin/emails?purpose=PasswordChanged');
like $r->{content}, qr{<pre[^>]*>Your password on \Q$origin\E was changed\.}, 'a template without html gets its text as html';
$r = $t->req(GET => '/admin/emails?purpose=nope');
is $r->{status}, 404, 'an unknown purpose is 404';
$r = $t->req(POST => '/admin/emails', json => {});
is $r->{status}, 405, 'POST is 405';
$t->done;

# ---------------------------------------------------------------- nginx -t
my $c = SigninTest->new;
$dir = $c->prefix;
my @bad = (
    ['no_code.txt', "Subject: Hi\n\nNo code here.\n", 'SignIn', qr/SignIn: the text must show \{\{code\}\} or \{\{token\}\}/],
    ['unknown.txt', "Subject: Hi\n\n{{token}} {{name}}\n", 'SignIn', qr/unknown "\{\{name\}\}"/],
    ['subject.txt', "Subject: {{token}}\n\n{{token}}\n", 'Registration', qr/subject must not show the code/],
    ['notice.txt', "Subject: Hi\n\n{{token}}\n", 'PasswordChanged', qr/is a notice/],
    ['locked.txt', "Subject: Hi\n\n{{code}}\n", 'auth.mfa_locked', qr/MfaLocked is a notice/],
    ['noblank.txt', "Subject: Hi\n{{token}}\n", 'SignIn', qr/empty line must follow/],
    ['link.txt', "Subject: Hi\n\nSee {{link}}\n", 'EmailChanged', qr/EmailChanged: \{\{link\}\} spends the token/],
    ['linksubj.txt', "Subject: {{link}}\n\n{{code}}\n", 'SignIn', qr/subject must not show \{\{link\}\}/],
);
for my $b (@bad) {
    my ($name, $text, $purpose, $why) = @$b;
    my $f = write_file($name, $text);
    my ($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template $purpose $f;"));
    isnt $rc, 0, "$name fails nginx -t";
    like $out, $why, '... saying why';
    like $out, qr/nginx\.conf:\d+/, '... with the file and line';
}
my ($rc, $out);
my $ok = write_file('ok.txt', "Subject: Hi\n\n{{token}}\n");
my $ok_link = write_file('ok_link.txt', "Subject: Hi\n\n{{code}}\n{{link}}\n");
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template Invitation $ok_link;"));
is $rc, 0, '{{link}} in a purpose whose token signs in passes nginx -t' or diag $out;
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template EmailChange $ok_link;"));
is $rc, 0, '... and in an email change (its link confirms the change)' or diag $out;
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template SignIn $ok;"));
is $rc, 0, 'a good template passes nginx -t' or diag $out;
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template SignIn $ok; signin_email_template sign_in $ok;"));
isnt $rc, 0, 'two templates for one purpose fail nginx -t';
like $out, qr/duplicate/, '... as a duplicate';
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template Welcome $ok;"));
isnt $rc, 0, 'an unknown purpose fails nginx -t';
like $out, qr/unknown purpose "Welcome"/, '... naming it';
like $out, qr/Invitation, MfaLocked, NewSignIn, or their tags/, '... and listing the purposes';
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => "signin_email_template SignIn $dir/missing.txt;"));
isnt $rc, 0, 'a missing file fails nginx -t';
like $out, qr/cannot read/, '... saying so';

done_testing;
