// The languages of pages and emails: PO parsing, the choice of a language, the shipped catalogs'
// completeness, and pages and emails rendered in each language.
#include <gtest/gtest.h>

#include <set>

#include "signin/emails.hpp"
#include "signin/i18n.hpp"
#include "signin/oidc_issuer.hpp"
#include "signin/pages.hpp"

namespace signin {
namespace {

using i18n::Languages;

// The names of a message's ICU arguments: "{" then an identifier ended by "}" or ",". Scanned by
// hand: libstdc++'s <regex> trips GCC 12's maybe-uninitialized warning in the sanitized build.
std::set<std::string> arg_names(const std::string &message) {
    auto first = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    auto rest = [&](char c) { return first(c) || (c >= '0' && c <= '9'); };
    std::set<std::string> out;
    for (std::size_t open = message.find('{'); open != std::string::npos; open = message.find('{', open + 1)) {
        std::size_t end = open + 1;
        if (end >= message.size() || !first(message[end])) continue;
        while (end < message.size() && rest(message[end])) end++;
        if (end < message.size() && (message[end] == '}' || message[end] == ','))
            out.insert(message.substr(open + 1, end - open - 1));
    }
    return out;
}

// An argument left in a rendered page: a name of lower-case letters only, as the pages' own are.
bool has_unfilled_argument(const std::string &html) {
    for (const std::string &name : arg_names(html))
        if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos) return true;
    return false;
}

std::vector<std::string> every_message() {
    std::vector<std::string> all = pages::messages();
    for (const auto &m : Emails::messages()) all.push_back(m);
    for (const auto &m : op_page_messages()) all.push_back(m);
    return all;
}

TEST(Po, ParsesEntriesContinuationsEscapesAndFlags) {
    auto e = i18n::parse_po(
        "# a comment\n"
        "msgid \"\"\n"
        "msgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n"
        "\n"
        "#: src/pages/signin.html\n"
        "msgid \"Sign \"\n"
        "\"in\"\n"
        "msgstr \"An\" \n"
        "  \"melden\\t\\\"x\\\"\\\\\"\n"
        "\n"
        "#, fuzzy\n"
        "msgid \"Guess\"\n"
        "msgstr \"Vermutung\"\n"
        "msgctxt \"menu\"\n"
        "msgid \"Open\"\n"
        "msgstr \"Öffnen\"\n"
        "#~ msgid \"old\"\n"
        "#~ msgstr \"alt\"\n"
        "msgid \"one\"\n"
        "msgid_plural \"many\"\n"
        "msgstr[0] \"eins\"\n"
        "msgstr[1] \"viele\"\n");
    ASSERT_TRUE(e) << e.error().message;
    ASSERT_EQ(e->size(), 5u);
    EXPECT_EQ((*e)[0].id, "");
    EXPECT_EQ((*e)[1].id, "Sign in");
    EXPECT_EQ((*e)[1].text, "Anmelden\t\"x\"\\");
    EXPECT_FALSE((*e)[1].fuzzy);
    EXPECT_TRUE((*e)[2].fuzzy);
    EXPECT_EQ((*e)[3].context, "menu");
    EXPECT_EQ((*e)[3].text, "Öffnen");
    EXPECT_EQ((*e)[4].text, "eins");
}

TEST(Po, RefusesMalformedFilesNamingTheLine) {
    for (const char *bad : {"msgid \"a\"\n", "msgstr \"a\"\n", "\"loose\"\n", "msgid \"a\nmsgstr \"b\"\n",
                            "msgid \"a\"\nmsgstr \"b\" x\n", "msgid \"a\"\nmsgstr \"\\q\"\n",
                            "msgid \"a\"\nmsgstr \"b\"\nmsgid \"a\"\nmsgstr \"c\"\n", "msgfoo \"a\"\n",
                            "msgid \"a\"\nmsgstr \"b\"\nmsgstr \"c\"\n", "msgid \"a\"\nmsgstr[x] \"b\"\n"}) {
        auto e = i18n::parse_po(bad);
        ASSERT_FALSE(e) << bad;
        EXPECT_NE(e.error().message.find("line "), std::string::npos) << e.error().message;
    }
    EXPECT_FALSE(i18n::parse_po(std::string(5u << 20, '#')));
}

TEST(AcceptLanguage, RangesBestFirstWithoutStarOrZero) {
    EXPECT_EQ(i18n::accept_language_ranges("fr;q=0.5, de-CH, en;q=0.8, *;q=0.9, ja;q=0"),
              (std::vector<std::string>{"de-CH", "en", "fr"}));
    EXPECT_EQ(i18n::accept_language_ranges("de;q=1.000, fr;q=1"), (std::vector<std::string>{"de", "fr"}));
    for (const char *bad : {"", "*", ";;;", "de;q=2", "de;q=0.1234", "de;x=1", "<script>", ",,,", "d e"}) {
        const auto r = i18n::accept_language_ranges(bad);
        EXPECT_TRUE(r.empty() || r == std::vector<std::string>{"de"}) << bad;
    }
    // a header of 4 KiB or more: read up to 4 KiB, at most 32 ranges
    std::string big;
    while (big.size() < 8192) big += "xx-yy;q=0.5, ";
    EXPECT_LE(i18n::accept_language_ranges(big).size(), 32u);
}

TEST(AcceptLanguage, LookupCutsTheRangeFromTheEnd) {
    const std::vector<std::string> tags = {"en", "de", "pt-BR", "zh-Hant"};
    EXPECT_EQ(i18n::lookup("de-CH-1996", tags), 1u);
    EXPECT_EQ(i18n::lookup("PT-br", tags), 2u);
    EXPECT_EQ(i18n::lookup("pt", tags), std::nullopt);  // lookup never widens a tag
    EXPECT_EQ(i18n::lookup("zh-Hant-x-private", tags), 3u);
    EXPECT_EQ(i18n::lookup("fr", tags), std::nullopt);
}

TEST(Languages, ChooseTheCookieThenTheHeaderThenTheFirst) {
    auto langs = Languages::make({"de", "en", "ja", "ar"});
    ASSERT_TRUE(langs) << langs.error().message;
    const Languages &l = **langs;
    EXPECT_EQ(l.choose("", ""), 0u);
    EXPECT_EQ(l.choose("", "ja-JP,en;q=0.5"), 2u);
    EXPECT_EQ(l.choose("", "fr, en-GB;q=0.9"), 1u);
    EXPECT_EQ(l.choose("AR", "ja"), 3u);    // the picker's cookie wins
    EXPECT_EQ(l.choose("xx", "ja"), 2u);    // a cookie naming no configured language is ignored
    EXPECT_EQ(l.choose("", "*"), 0u);
    EXPECT_EQ(l.choose("", std::string(4096, 'a')), 0u);
    EXPECT_EQ(l.choose("", "\x01\xff garbage;;q==,"), 0u);
    EXPECT_TRUE(l.rtl(3));
    EXPECT_FALSE(l.rtl(0));
    EXPECT_EQ(l.native_name(0), "Deutsch");
    EXPECT_EQ(l.native_name(2), "日本語");
}

TEST(Languages, RefusedWithoutACatalogOrWithABadOne) {
    EXPECT_FALSE(Languages::make({"sv"}));  // not shipped, no signin_messages
    EXPECT_FALSE(Languages::make({"de", "de"}));
    EXPECT_FALSE(Languages::make({"d"}));
    EXPECT_FALSE(Languages::make({"de"}, {{"fr", "msgid \"a\"\nmsgstr \"b\"\n"}}));  // not in the list
    auto bad_icu = Languages::make({"de"}, {{"de", "msgid \"Sign in\"\nmsgstr \"{oops\"\n"}});
    ASSERT_FALSE(bad_icu);
    EXPECT_NE(bad_icu.error().message.find("line 1: not a valid ICU message"), std::string::npos)
        << bad_icu.error().message;  // the entry's first line
}

TEST(Languages, AnOverrideChangesOneStringAndTheRestFallsBack) {
    auto langs = Languages::make({"en", "de", "sv"}, {{"de", "msgid \"Sign in\"\nmsgstr \"Einloggen\"\n"},
                                                      {"sv", "msgid \"Sign in\"\nmsgstr \"Logga in\"\n"}});
    ASSERT_TRUE(langs) << langs.error().message;
    const Languages &l = **langs;
    EXPECT_EQ(l.text(1, "Sign in"), "Einloggen");
    EXPECT_EQ(l.text(1, "Sign out"), "Abmelden");  // the shipped catalog under the override
    EXPECT_EQ(l.text(2, "Sign in"), "Logga in");
    EXPECT_EQ(l.text(2, "Sign out"), "Sign out");  // missing: English
    EXPECT_EQ(l.text(0, "Sign out"), "Sign out");
}

// Every shipped catalog has every text of the pages and emails, with the same arguments: a
// catalog that lacks one (a new text not yet translated) fails here.
TEST(Languages, EveryShippedCatalogTranslatesEveryText) {
    const auto messages = every_message();
    ASSERT_GT(messages.size(), 200u);
    std::vector<std::string> tags = {"en"};
    for (const auto &[tag, body] : Languages::shipped()) tags.emplace_back(tag);
    EXPECT_EQ(tags.size(), 10u);
    auto langs = Languages::make(tags);
    ASSERT_TRUE(langs) << langs.error().message;
    for (std::size_t i = 1; i < tags.size(); i++) {
        for (const std::string &m : messages) {
            EXPECT_TRUE((*langs)->translates(i, m)) << tags[i] << " lacks: " << m;
            EXPECT_EQ(arg_names(std::string((*langs)->text(i, m))), arg_names(m)) << tags[i] << ": " << m;
        }
    }
}

TEST(Languages, PluralsByEachLanguagesRules) {
    auto langs = Languages::make({"en", "pl", "ar", "ja"});
    ASSERT_TRUE(langs);
    const std::string minutes = "{minutes, plural, one {# minute} other {# minutes}}";
    auto f = [&](std::size_t lang, double n) { return (*langs)->format(lang, minutes, {i18n::number_arg("minutes", n)}); };
    EXPECT_EQ(f(0, 1), "1 minute");
    EXPECT_EQ(f(0, 5), "5 minutes");
    EXPECT_EQ(f(1, 1), "1 minutę");
    EXPECT_EQ(f(1, 3), "3 minuty");
    EXPECT_EQ(f(1, 5), "5 minut");
    EXPECT_EQ(f(1, 22), "22 minuty");
    EXPECT_EQ(f(2, 2), "دقيقتين");
    EXPECT_EQ(f(3, 10), "10分");
}

TEST(Languages, TheRequestLanguageIsScopedToItsThread) {
    EXPECT_EQ(i18n::RequestLanguage::current(), "");
    {
        i18n::RequestLanguage de("de");
        EXPECT_EQ(i18n::RequestLanguage::current(), "de");
        {
            i18n::RequestLanguage ja("ja");
            EXPECT_EQ(i18n::RequestLanguage::current(), "ja");
        }
        EXPECT_EQ(i18n::RequestLanguage::current(), "de");
    }
    EXPECT_EQ(i18n::RequestLanguage::current(), "");
}

// No page, in any language, shows a template name or an untranslated message's syntax.
TEST(LocalizedPages, NoRawKeyInAnyLanguage) {
    std::vector<std::string> tags = {"en"};
    for (const auto &[tag, body] : Languages::shipped()) tags.emplace_back(tag);
    auto langs = Languages::make(tags);
    ASSERT_TRUE(langs);
    pages::Settings s;
    s.site_name = "Acme";
    s.account = "a@example.com";
    s.login_url = "/auth/";
    s.remember_days = 30;
    pages::Localized localized(*langs, s);
    for (std::size_t lang = 0; lang < tags.size(); lang++) {
        for (auto page : {pages::Page::SignIn, pages::Page::Account, pages::Page::Forbidden, pages::Page::Unavailable,
                          pages::Page::Admin}) {
            const std::string html = localized.render(page, lang, s);
            SCOPED_TRACE(tags[lang] + " page " + std::to_string(static_cast<int>(page)));
            EXPECT_EQ(html.find("{{"), std::string::npos);
            EXPECT_EQ(html.find("_}}"), std::string::npos);
            EXPECT_FALSE(has_unfilled_argument(html)) << html;
            EXPECT_NE(html.find("<html lang=\"" + tags[lang] + "\" dir=\"" + (tags[lang] == "ar" ? "rtl" : "ltr")),
                      std::string::npos);
            if (page != pages::Page::Unavailable) {
                EXPECT_NE(html.find("id=\"signin-language\""), std::string::npos);
            }
        }
    }
    const std::string de = localized.render(pages::Page::SignIn, *(*langs)->find("de"), s);
    EXPECT_NE(de.find("Diesen Browser 30 Tage lang merken"), std::string::npos);
    EXPECT_NE(de.find("<option value=\"de\" lang=\"de\" selected>Deutsch</option>"), std::string::npos);
}

// The scripts' strings are an asset per language, linked by its hash: never inline in the page.
TEST(LocalizedPages, TheScriptsCatalogIsAnAssetOfItsLanguage) {
    auto langs = Languages::make({"en", "de"});
    ASSERT_TRUE(langs);
    pages::Settings s;
    s.login_url = "/auth/";
    pages::Localized localized(*langs, s);
    EXPECT_FALSE(localized.catalog("i18n-en.js")) << "English translates nothing: no catalog";
    EXPECT_FALSE(localized.catalog("i18n-fr.js"));
    EXPECT_FALSE(localized.catalog("signin.js"));
    const auto de = localized.catalog("i18n-de.js");
    ASSERT_TRUE(de);
    EXPECT_EQ(de->content_type, "text/javascript; charset=utf-8");
    EXPECT_EQ(de->hash.size(), 12u);
    EXPECT_EQ(de->body.rfind("globalThis.signinCatalog={", 0), 0u);
    EXPECT_NE(de->body.find("\"Check your email\":"), std::string_view::npos) << "signin.js's strings";
    EXPECT_NE(de->body.find("\"An app\":"), std::string_view::npos) << "account.js's strings";
    EXPECT_NE(de->body.find("\"This account may not open the administration pages.\":"), std::string_view::npos)
        << "admin.js's strings";
    for (auto page : {pages::Page::SignIn, pages::Page::Account, pages::Page::Forbidden, pages::Page::Admin}) {
        const std::string html = localized.render(page, 1, s);
        EXPECT_NE(html.find("i18n-de.js?v=" + std::string(de->hash) + "\" defer></script>"), std::string::npos);
        EXPECT_EQ(html.find("Check your email"), std::string::npos) << "no catalog in the page";
        EXPECT_EQ(localized.render(page, 0, s).find("i18n-"), std::string::npos) << "English links none";
    }
}

TEST(LocalizedEmails, InTheDeliverysLanguageWithTheDefaultForAnUnknownOne) {
    auto langs = Languages::make({"en", "de", "ar", "pl"});
    ASSERT_TRUE(langs);
    Emails emails(5 * 60 * 1000);
    emails.set_site_name("Acme");
    emails.set_languages(*langs);
    Delivery d;
    d.email = "a@example.com";
    d.token = Secret(std::string("TOKEN"));
    d.code = "ABCD-EFGH";
    d.lang = "de";
    Email e = emails.render(d, "https://acme.example");
    EXPECT_EQ(e.subject, "Ihr Anmeldecode für Acme");
    EXPECT_NE(e.text.find("5 Minuten lang gültig"), std::string::npos) << e.text;
    EXPECT_NE(e.html.find("<html lang=\"de\">"), std::string::npos);
    d.lang = "AR";
    e = emails.render(d, "https://acme.example");
    EXPECT_NE(e.html.find("<html lang=\"ar\" dir=\"rtl\">"), std::string::npos);
    EXPECT_NE(e.subject.find("Acme"), std::string::npos);
    d.lang = "pl";
    EXPECT_NE(emails.render(d, "https://acme.example").text.find("5 minut"), std::string::npos);
    d.lang = "xx";
    EXPECT_EQ(emails.render(d, "https://acme.example").subject, "Your sign-in code for Acme");
    // a template of one language only; the others keep the built-in email
    auto t = Emails::parse(Purpose::SignIn, "Subject: Hallo {{site_name}}\n\nCode: {{code}}\n");
    ASSERT_TRUE(t);
    ASSERT_TRUE(emails.replace(Purpose::SignIn, t.value(), "DE"));
    EXPECT_TRUE(emails.is_custom(Purpose::SignIn, "de"));
    EXPECT_FALSE(emails.is_custom(Purpose::SignIn));
    d.lang = "de";
    EXPECT_EQ(emails.render(d, "https://acme.example").subject, "Hallo Acme");
    d.lang = "en";
    EXPECT_EQ(emails.render(d, "https://acme.example").subject, "Your sign-in code for Acme");
}

}  // namespace
}  // namespace signin
