# signin_languages and signin_messages over HTTP: the pages in the language of the svc_lang cookie,
# else of Accept-Language (RFC 4647 lookup), else the first configured; bad headers get the
# default, never an error; an operator's PO file overrides strings and falls back to the shipped
# catalog, then English; emails in the language of the request that caused them and notices in
# the account's last one, through the dev mailbox; every shipped catalog passes `msgfmt --check`;
# nginx -t refuses a language without a catalog and a bad PO file, naming the line.
use strict; use warnings;
use utf8;
use Test::More;
use Encode qw(decode_utf8);
use lib 't/lib'; use SigninTest;

my $root = $ENV{SIGNIN_ROOT} // '.';

# ---- the shipped catalogs, checked by GNU gettext itself
SKIP: {
    skip 'msgfmt is not installed (the gettext package)', 1 unless `msgfmt --version 2>/dev/null`;
    my @po = glob("$root/src/i18n/*.po");
    ok @po >= 9, 'the catalogs are in src/i18n';
    for my $po (@po, "$root/src/i18n/signin.pot") {
        my $out = `msgfmt --check --check-format -o /dev/null $po 2>&1`;
        is $?, 0, "msgfmt --check $po" or diag $out;
    }
}

my $t = SigninTest->new;
my $override = $t->prefix . '/de-site.po';
open my $fh, '>:utf8', $override or die $!;
print $fh qq{# the site's own wording\nmsgid "Sign in"\nmsgstr "Einloggen bei uns"\n\n}
        . qq{msgid "Email me a code"\nmsgstr ""\n};
close $fh;
$t->run(http => $t->signin_http(
    extra => qq{signin_site_name Acme; signin_languages en de fr ja ar pt-BR; signin_messages de $override;},
    auth => q{signin_pages on;}));

sub page {
    my (%h) = @_;
    my $r = $t->req(GET => '/auth/', headers => \%h);
    return ($r, decode_utf8($r->{content} // ''));
}

my ($r, $html) = page();
is $r->{status}, 200, 'no Accept-Language: the page';
like $html, qr{<html lang="en" dir="ltr">}, '... in the first language';
like $html, qr{<h1 id="title" tabindex="-1">Sign in</h1>}, '... English';
is $r->{headers}{'content-language'}, 'en', '... Content-Language: en';
like $r->{headers}{vary} // '', qr/Accept-Language/, '... Vary: Accept-Language';
like $html, qr{<select id="signin-language">.*<option value="de" lang="de">Deutsch</option>}s, '... with the picker';

($r, $html) = page('accept-language' => 'de-CH, en;q=0.5');
like $html, qr{<html lang="de" dir="ltr">}, 'Accept-Language de-CH: German (lookup cuts de-CH to de)';
like $html, qr{<h1 id="title" tabindex="-1">Einloggen bei uns</h1>}, '... with the override file\'s wording';
like $html, qr{Code per E-Mail senden}, '... an empty msgstr there: the shipped German';
like $html, qr{Diesen Browser 30 Tage lang merken}, '... plurals by ICU';
# the scripts' strings: a script of their own per language, cached like the other assets
my ($catalog) = $html =~ m{<script src="assets/(i18n-de\.js\?v=[0-9a-f]{12})" defer></script>};
ok $catalog, '... the scripts\' catalog linked as assets/i18n-de.js?v=HASH';
unlike $html, qr{Anmeldung läuft}, '... and not written into the page';
my $js = $t->req(GET => "/auth/assets/$catalog");
is $js->{status}, 200, 'the catalog script: 200';
like $js->{headers}{'content-type'} // '', qr{^text/javascript}, '... JavaScript';
my ($hash) = $catalog =~ /v=(\w+)/;
is $js->{headers}{etag}, qq{"$hash"}, '... its ETag the hash in its link';
is $js->{headers}{'cache-control'}, 'no-cache', '... revalidated like the other assets';
like decode_utf8($js->{content}), qr{^globalThis\.signinCatalog=\{.*"Signing in…":"Anmeldung läuft…"}s,
    '... setting the catalog with the scripts\' strings';
is $t->req(GET => "/auth/assets/$catalog", headers => { 'if-none-match' => qq{"$hash"} })->{status}, 304,
    '... and 304 when unchanged';
my ($en_r, $english) = page();
unlike $english, qr{i18n-}, 'an English page links no catalog';
is $t->req(GET => '/auth/assets/i18n-en.js')->{status}, 404, '... and there is none';
is $t->req(GET => '/auth/assets/i18n-sv.js')->{status}, 404, 'nor for a language not configured';
cmp_ok length($r->{content}), '<', 1.25 * length($en_r->{content}),
    sprintf 'the German page is about the size of the English one (%d vs %d bytes)',
        length($r->{content}), length($en_r->{content});

($r, $html) = page('accept-language' => 'fr;q=0.4, ja;q=0.9, *');
like $html, qr{<html lang="ja"}, 'q-values: Japanese before French';
($r, $html) = page('accept-language' => 'pt-br');
like $html, qr{<html lang="pt-BR"}, 'pt-br: Portuguese (Brazil), whatever the case';
($r, $html) = page('accept-language' => 'ar-EG');
like $html, qr{<html lang="ar" dir="rtl">}, 'Arabic: right to left';
($r, $html) = page('accept-language' => 'ja', cookie => 'svc_lang=fr');
like $html, qr{<html lang="fr"}, 'the picker\'s svc_lang cookie wins over Accept-Language';
like $html, qr{Se connecter}, '... French';
($r, $html) = page('accept-language' => 'ja', cookie => 'svc_lang=xx');
like $html, qr{<html lang="ja"}, 'a cookie naming no configured language is ignored';

for my $bad ('*', 'x' x 4096, 'de;q=5, ;;; ,,', "%%%, ;q=, -x-;q=-1, ---", 'sv-SE, nb;q=0.9', ('de-CH;q=0.5, ' x 400)) {
    my ($br) = page('accept-language' => $bad);
    is $br->{status}, 200, 'a bad or unknown Accept-Language (' . length($bad) . ' bytes): 200';
}
($r, $html) = page('accept-language' => 'x' x 4096);
like $html, qr{<html lang="en"}, '... and the default language';

$r = $t->req(GET => '/auth/account', headers => { accept => 'text/html', 'accept-language' => 'pl' });
unlike decode_utf8($r->{content}), qr{<html lang="pl"}, 'a language not configured: the default';

# ---- emails in the language of the request that caused them
sub ask {
    my ($email, $lang) = @_;
    my $before = () = $t->emails_to($email);
    my $r = $t->req(POST => '/auth/register', json => { email => $email }, headers => { 'accept-language' => $lang });
    is $r->{status}, 202, "a code for $email, asked in $lang";
    return $t->last_email($email, count => $before + 1);
}
my $m = ask('hans@example.com', 'de');
is decode_utf8($m->{subject}), 'Bestätigen Sie Ihre Adresse für Acme', '... the subject in German';
like decode_utf8($m->{text}), qr{10 Minuten lang gültig}, '... the text too, with its plural';
$m = ask('amal@example.com', 'ar');
like decode_utf8($m->{subject}), qr{Acme}, 'in Arabic: the subject names the site';
like decode_utf8($m->{text}), qr{صالح لمدة}, '... in Arabic';
$m = ask('sam@example.com', 'nl, *');
is $m->{subject}, 'Confirm your address for Acme', 'a language not configured: the first one';

# the account keeps the language of its last sign-in; a notice is written in it
my $token = ask('yuki@example.com', 'ja')->{token};
$r = $t->req(POST => '/auth/session', json => { token => $token },
    headers => { origin => $t->origin, 'accept-language' => 'ja' });
is $r->{status}, 200, 'signed in from a Japanese browser';
my $cookie = SigninTest::set_cookie_pair($r);
$r = $t->req(POST => '/auth/email/change', json => { email => 'yuki2@example.com' },
    headers => { origin => $t->origin, cookie => $cookie, 'accept-language' => 'ja' });
is $r->{status}, 202, 'an email change';
my $new = $t->last_email('yuki2@example.com');
my $old = $t->last_email('yuki@example.com', purpose => 'EmailChangeApproval');
like decode_utf8($new->{subject}), qr{新しいアドレス}, '... its emails in Japanese';
for my $half ($new, $old) {
    $r = $t->req(POST => '/auth/email/confirm', json => { token => $half->{token} },
        headers => { origin => $t->origin, 'accept-language' => 'fr' });
    is $r->{status}, 200, '... a half confirmed from a French browser';
}
my $notice = $t->last_email('yuki@example.com', purpose => 'EmailChanged');
like decode_utf8($notice->{subject}), qr{アドレスが変更されました}, 'the notice: in the account\'s last language, not the request\'s';

# ---- nginx -t
my $c = SigninTest->new;
my ($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => q{signin_languages en sv;}));
isnt $rc, 0, 'a language without a catalog is refused';
like $out, qr{no catalog for "sv".*signin_messages sv}, '... saying how to give one';
like $out, qr{nginx\.conf:\d+}, '... naming the line';
my $bad = $c->prefix . '/bad.po';
open $fh, '>', $bad or die $!;
print $fh qq{msgid "Sign in"\nmsgstr "A"\n\nmsgid "Sign out"\n"unterminated\n};
close $fh;
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => qq{signin_languages en sv; signin_messages sv $bad;}));
isnt $rc, 0, 'a bad PO file is refused';
like $out, qr{signin_messages: "\S*bad\.po", line 5}, '... naming the file and its line';
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => q{signin_languages en de_DE;}));
isnt $rc, 0, 'a tag that is not a language tag is refused';
my $ok = $c->prefix . '/sv.po';
open $fh, '>', $ok or die $!;
print $fh qq{msgid "Sign in"\nmsgstr "Logga in"\n};
close $fh;
($rc, $out) = $c->nginx_t(http => $c->signin_http(extra => qq{signin_languages en sv; signin_messages sv $ok;}));
is $rc, 0, 'a language the module does not ship, with its catalog: accepted' or diag $out;

$t->done;
done_testing;
