// The ready-made emails: built-in templates, custom ones, rendering, previews.
#include <gtest/gtest.h>

#include "signin/json.hpp"
#include "signin/emails.hpp"

using namespace signin;

namespace {

const char *kOrigin = "https://app.example.com";

// A delivery whose token is "ABCD-EFGH-1234" and whose short code is `code`.
Delivery delivery(Purpose p, std::string code = "ABCD-EFGH", std::string email = "ann@example.com") {
    Delivery d;
    d.email = std::move(email);
    d.purpose = p;
    d.token = Secret(code.empty() ? std::string() : "ABCD-EFGH-1234");
    d.code = std::move(code);
    return d;
}

bool has(const std::string &hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

TEST(Emails, EveryPurposeHasATaggedBuiltInEmail) {
    Emails emails;
    for (Purpose p : all_purposes()) {
        const bool notice = p == Purpose::EmailChanged || p == Purpose::PasswordChanged || p == Purpose::MfaLocked ||
                            p == Purpose::NewSignIn;
        Email e = emails.render(delivery(p, notice ? "" : "ABCD-EFGH"), kOrigin);
        EXPECT_EQ(e.tag, "auth." + std::string(purpose_tag(p)));
        EXPECT_FALSE(e.subject.empty()) << purpose_name(p);
        EXPECT_FALSE(has(e.subject, "ABCD")) << "no code in a subject";
        EXPECT_TRUE(has(e.subject, "app.example.com")) << "the subject names the site: " << e.subject;
        EXPECT_TRUE(has(e.text, "app.example.com")) << purpose_name(p);
        EXPECT_TRUE(has(e.html, "<!doctype html>")) << purpose_name(p);
        EXPECT_EQ(has(e.text, "ABCD-EFGH"), !notice) << purpose_name(p);
        EXPECT_EQ(has(e.html, "ABCD-EFGH"), !notice) << purpose_name(p);
        EXPECT_FALSE(has(e.text, "ABCD-EFGH-1234")) << "the short code, not the whole token";
        EXPECT_FALSE(has(e.text, "{{")) << purpose_name(p);
        EXPECT_FALSE(emails.is_custom(p));
    }
    EXPECT_EQ(emails.render(delivery(Purpose::SignIn), kOrigin).tag, "auth.sign_in");
}

TEST(Emails, HtmlEscapesEveryValueAndTextKeepsThem) {
    Emails emails;
    Email e = emails.render(delivery(Purpose::EmailChange, "A&B", "x<script>@example.com"), "https://a.example\"");
    EXPECT_TRUE(has(e.text, "x<script>@example.com"));
    EXPECT_FALSE(has(e.html, "<script>"));
    EXPECT_TRUE(has(e.html, "x&lt;script&gt;@example.com"));
    EXPECT_TRUE(has(e.html, "A&amp;B"));
    EXPECT_TRUE(has(e.html, "a.example&quot;"));
}

TEST(Emails, MinutesFollowTheTokenLifetime) {
    EXPECT_TRUE(has(Emails(15 * 60 * 1000).render(delivery(Purpose::SignIn), kOrigin).text, "valid for 15 minutes"));
    EXPECT_TRUE(has(Emails(90 * 1000).render(delivery(Purpose::SignIn), kOrigin).text, "valid for 2 minutes"));
    const std::string one = Emails(1000).render(delivery(Purpose::SignIn), kOrigin).text;
    EXPECT_TRUE(has(one, "valid for 1 minute and")) << "one minute, singular";
    EXPECT_FALSE(has(one, "1 minutes"));
}

TEST(Emails, PasswordNoteOnlyWhenTheRegistrationChoseAPassword) {
    Emails emails;
    Delivery plain = delivery(Purpose::Registration);
    Delivery with = plain;
    with.with_password = true;
    EXPECT_FALSE(has(emails.render(plain, kOrigin).text, "A password was chosen"));
    EXPECT_TRUE(has(emails.render(with, kOrigin).text, "A password was chosen"));
    EXPECT_TRUE(has(emails.render(with, kOrigin).html, "A password was chosen"));
    Delivery sign_in = delivery(Purpose::SignIn);
    sign_in.with_password = true;
    EXPECT_FALSE(has(emails.render(sign_in, kOrigin).text, "A password was chosen"));
}

TEST(Emails, ParseReadsSubjectThenEmptyLineThenText) {
    auto t = Emails::parse(Purpose::SignIn, "Subject: Your {{origin}} code\n\nHello {{email}},\ncode: {{ token }}\n");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->subject, "Your {{origin}} code");
    EXPECT_EQ(t->text, "Hello {{email}},\ncode: {{ token }}\n");
    EXPECT_TRUE(t->html.empty());
    auto crlf = Emails::parse(Purpose::SignIn, "Subject: Code\r\n\r\n{{token}}\r\n");
    ASSERT_TRUE(crlf) << crlf.error().message;
    EXPECT_EQ(crlf->subject, "Code");
}

TEST(Emails, ParseRefusesWhatWouldMakeABadEmail) {
    struct Case {
        Purpose purpose;
        const char *file, *html, *why;
    } cases[] = {
        {Purpose::SignIn, "Hello\n\n{{token}}", "", "first line must be"},
        {Purpose::SignIn, "Subject: x\nno empty line {{token}}", "", "empty line must follow"},
        {Purpose::SignIn, "Subject: \n\n{{token}}", "", "one line, not empty"},
        {Purpose::SignIn, "Subject: x\n\n{{tokn}}", "", "unknown \"{{tokn}}\""},
        {Purpose::SignIn, "Subject: x\n\n{{token", "", "never closed"},
        {Purpose::SignIn, "Subject: x\n\nno code here", "", "must show {{code}} or {{token}}"},
        {Purpose::SignIn, "Subject: x\n\n{{token}}", "<p>no code</p>", "html must show {{code}} or {{token}}"},
        {Purpose::SignIn, "Subject: code {{code}}\n\n{{code}}", "", "must not show the code"},
        {Purpose::PasswordChanged, "Subject: x\n\nYour code {{code}}", "", "is a notice"},
        {Purpose::SignIn, "Subject: code {{token}}\n\n{{token}}", "", "must not show the code"},
        {Purpose::PasswordChanged, "Subject: x\n\nYour code {{token}}", "", "is a notice"},
        {Purpose::Registration, "Subject: x\n\n{{token}}", "<p>{{nope}}</p>", "html: unknown"},
        {Purpose::SignIn, "Subject: go to {{link}}\n\n{{code}}", "", "subject must not show {{link}}"},
        {Purpose::EmailChanged, "Subject: x\n\nSee {{link}}", "", "{{link}} spends the token"},
        {Purpose::PasswordChanged, "Subject: x\n\nSee {{link}}", "", "{{link}} spends the token"},
        {Purpose::MfaLocked, "Subject: x\n\nYour code {{code}}", "", "is a notice"},
        {Purpose::MfaLocked, "Subject: x\n\nSee {{link}}", "", "{{link}} spends the token"},
        {Purpose::SignIn, "Subject: x\n\nOpen {{link}}", "", "must show {{code}} or {{token}}"},
    };
    for (const Case &c : cases) {
        auto t = Emails::parse(c.purpose, c.file, c.html);
        ASSERT_FALSE(t) << c.file;
        EXPECT_TRUE(has(t.error().message, c.why)) << c.file << " -> " << t.error().message;
        EXPECT_EQ(t.error().code, Code::InvalidRequest);
    }
}

TEST(Emails, ACustomTemplateReplacesOnePurposeOnly) {
    Emails emails(10 * 60 * 1000);
    auto t = Emails::parse(Purpose::SignIn, "Subject: Sign in to {{origin}}\n\nHi {{email}}: {{token}} ({{minutes}} min)\n",
                           "<b>{{token}}</b> for {{email}}");
    ASSERT_TRUE(t) << t.error().message;
    ASSERT_TRUE(emails.replace(Purpose::SignIn, t.value()));
    EXPECT_TRUE(emails.is_custom(Purpose::SignIn));
    Email e = emails.render(delivery(Purpose::SignIn), kOrigin);
    EXPECT_EQ(e.subject, "Sign in to https://app.example.com");
    EXPECT_EQ(e.text, "Hi ann@example.com: ABCD-EFGH-1234 (10 min)\n");
    EXPECT_EQ(e.html, "<b>ABCD-EFGH-1234</b> for ann@example.com");
    EXPECT_EQ(e.tag, "auth.sign_in");
    EXPECT_EQ(emails.render(delivery(Purpose::Registration), kOrigin).subject, "Confirm your address for app.example.com");
    emails.set_site_name("Acme");
    EXPECT_EQ(emails.render(delivery(Purpose::Registration), kOrigin).subject, "Confirm your address for Acme");

    // without an html file the html is the text, escaped
    auto plain = Emails::parse(Purpose::AlreadyRegistered, "Subject: x\n\n<{{token}}>\n");
    ASSERT_TRUE(plain && emails.replace(Purpose::AlreadyRegistered, plain.value()));
    Email p = emails.render(delivery(Purpose::AlreadyRegistered), kOrigin);
    EXPECT_TRUE(has(p.html, "&lt;ABCD-EFGH-1234&gt;"));
}

TEST(Emails, PreviewsListEveryPurposeWithASampleCode) {
    Emails emails;
    auto t = Emails::parse(Purpose::PasswordChanged, "Subject: Changed\n\nYour password on {{origin}} changed.\n");
    ASSERT_TRUE(t && emails.replace(Purpose::PasswordChanged, t.value()));
    auto list = emails.previews(kOrigin);
    ASSERT_EQ(list.size(), all_purposes().size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        EXPECT_EQ(list[i].purpose, all_purposes()[i]);
        EXPECT_TRUE(has(list[i].text, Emails::kPreviewEmail) || !has(list[i].text, "@"));
    }
    EXPECT_TRUE(has(list[0].text, Emails::kPreviewCode));
    EXPECT_EQ(list[6].subject, "Changed");  // PasswordChanged, replaced
    std::string json = json::email_previews(emails, kOrigin);
    EXPECT_TRUE(has(json, "\"tag\":\"auth.password_changed\",\"custom\":true"));
    EXPECT_TRUE(has(json, "\"tag\":\"auth.sign_in\",\"custom\":false"));
}

constexpr std::string_view kBase = "https://app.example.com/auth/";

TEST(Emails, TheLinkIsTheBaseWithTheTokenInTheFragment) {
    Emails emails;
    emails.set_link_base(std::string(kBase));
    const std::string link = std::string(kBase) + "#token=ABCD-EFGH-1234";
    for (Purpose p : {Purpose::SignIn, Purpose::Registration, Purpose::AlreadyRegistered, Purpose::Invitation}) {
        Email e = emails.render(delivery(p), kOrigin);
        EXPECT_EQ(e.link, link) << purpose_name(p);
        EXPECT_TRUE(has(e.text, "\nOr open this link: " + link + "\n")) << purpose_name(p);
        EXPECT_TRUE(has(e.html, "<a href=\"" + link + "\"")) << purpose_name(p) << ": the button";
        EXPECT_TRUE(has(e.html, "ABCD-EFGH")) << "the code stays";
        EXPECT_FALSE(has(e.subject, "#token=")) << purpose_name(p);
    }
    EXPECT_TRUE(has(emails.render(delivery(Purpose::SignIn), kOrigin).html, ">Sign in to app.example.com</a>"));
    // an email change's two tokens land on the page's confirmation, never on a sign-in
    for (Purpose p : {Purpose::EmailChange, Purpose::EmailChangeApproval}) {
        Email e = emails.render(delivery(p), kOrigin);
        EXPECT_EQ(e.link.rfind("https://app.example.com/auth/#confirm=", 0), 0u) << purpose_name(p) << e.link;
        EXPECT_FALSE(has(e.text, "#token=") || has(e.html, "#token=")) << purpose_name(p);
        EXPECT_TRUE(has(e.html, "<a href=\"" + e.link + "\"")) << purpose_name(p) << ": the button";
    }
    // the notices have no link
    for (Purpose p : {Purpose::EmailChanged, Purpose::PasswordChanged, Purpose::MfaLocked}) {
        Email e = emails.render(delivery(p, ""), kOrigin);
        EXPECT_EQ(e.link, "") << purpose_name(p);
        EXPECT_FALSE(has(e.text, "#token=") || has(e.html, "#token=") || has(e.html, "<a ")) << purpose_name(p);
        EXPECT_FALSE(has(e.text, "Or open this link")) << purpose_name(p);
    }
}

TEST(Emails, WithoutALinkBaseTheLinkIsEmptyAndTheButtonGone) {
    Emails emails;
    for (Purpose p : all_purposes()) {
        const bool notice = p == Purpose::EmailChanged || p == Purpose::PasswordChanged || p == Purpose::MfaLocked ||
                            p == Purpose::NewSignIn;
        Email e = emails.render(delivery(p, notice ? "" : "ABCD-EFGH"), kOrigin);
        EXPECT_EQ(e.link, "") << purpose_name(p);
        EXPECT_FALSE(has(e.html, "<a ")) << purpose_name(p) << ": no button";
        EXPECT_FALSE(has(e.text, "Or open this link")) << purpose_name(p);
        EXPECT_FALSE(has(e.text, "{{") || has(e.html, "{{")) << purpose_name(p);
        EXPECT_EQ(has(e.html, "ABCD-EFGH"), !notice) << purpose_name(p) << ": the code is still there";
    }
    // a custom template's {{link}} renders empty
    auto t = Emails::parse(Purpose::SignIn, "Subject: x\n\n{{code}} [{{link}}]\n", "<a href=\"{{link}}\">{{code}}</a>");
    ASSERT_TRUE(t && emails.replace(Purpose::SignIn, t.value()));
    Email e = emails.render(delivery(Purpose::SignIn), kOrigin);
    EXPECT_EQ(e.text, "ABCD-EFGH []\n");
    EXPECT_EQ(e.html, "<a href=\"\">ABCD-EFGH</a>");
    // ... and with a base, the custom one shows it
    emails.set_link_base(std::string(kBase));
    e = emails.render(delivery(Purpose::SignIn), kOrigin);
    EXPECT_EQ(e.text, "ABCD-EFGH [https://app.example.com/auth/#token=ABCD-EFGH-1234]\n");
}

TEST(Emails, TheLinkIsHtmlEscapedInHtmlOnly) {
    Emails emails;
    emails.set_link_base("https://a.example/auth/?x=\"1\"&y=<2>");
    Email e = emails.render(delivery(Purpose::SignIn), kOrigin);
    EXPECT_TRUE(has(e.text, "Or open this link: https://a.example/auth/?x=\"1\"&y=<2>#token=ABCD-EFGH-1234"));
    EXPECT_TRUE(has(e.html, "href=\"https://a.example/auth/?x=&quot;1&quot;&amp;y=&lt;2&gt;#token=ABCD-EFGH-1234\""));
    EXPECT_FALSE(has(e.html, "<2>"));
    EXPECT_FALSE(has(e.html, "x=\"1"));
}

TEST(Emails, TheBuiltInHtmlIsOneColumnWithALargeCode) {
    Emails emails;
    emails.set_link_base(std::string(kBase));
    for (Purpose p : all_purposes()) {
        const bool notice = p == Purpose::EmailChanged || p == Purpose::PasswordChanged || p == Purpose::MfaLocked ||
                            p == Purpose::NewSignIn;
        Email e = emails.render(delivery(p, notice ? "" : "ABCD-EFGH"), kOrigin);
        EXPECT_TRUE(has(e.html, "max-width:480px")) << purpose_name(p);
        EXPECT_TRUE(has(e.html, "<meta name=\"viewport\"")) << purpose_name(p);
        EXPECT_FALSE(has(e.html, "<style") || has(e.html, "<link") || has(e.html, "<img") || has(e.html, "<script"))
            << purpose_name(p) << ": inline styles only, nothing fetched";
        EXPECT_EQ(has(e.html, "white-space:nowrap;"), !notice) << purpose_name(p);
        Email unlinked = Emails().render(delivery(p, notice ? "" : "ABCD-EFGH"), kOrigin);
        EXPECT_FALSE(has(unlinked.text, "token") || has(unlinked.html, "token") || has(unlinked.subject, "token"))
            << purpose_name(p) << ": the copy says code, never token";
    }
    Email e = emails.render(delivery(Purpose::SignIn), kOrigin);
    EXPECT_TRUE(has(e.html, "font-size:30px;font-weight:bold;letter-spacing:4px;white-space:nowrap;"));
    EXPECT_TRUE(has(e.html, "user-select:all\">ABCD-EFGH</p>"));
    Email already = emails.render(delivery(Purpose::AlreadyRegistered), kOrigin);
    EXPECT_TRUE(has(already.text, "Use this code to sign in to app.example.com:"));
    EXPECT_TRUE(has(already.text, "If you did not ask for it, ignore this email."));
    Email joined = emails.render(delivery(Purpose::Registration), kOrigin);
    EXPECT_TRUE(has(joined.text, "If you did not ask for it, ignore this email.")) << "anyone can type any address";
}

// The notice of a locked second factor says what happened, the two ways back in, and what a
// lock the person did not cause may mean.
// The new-sign-in notice says when, with what and from where, in the email's language, and links
// to the account page (no token: the link spends nothing).
TEST(Emails, TheNewSignInNoticeSaysWhenWithWhatAndFromWhere) {
    Emails emails;
    emails.set_site_name("Acme");
    Delivery d = delivery(Purpose::NewSignIn, "");
    d.signed_in_at = 1798761600000 + 15 * 3600 * 1000 + 4 * 60 * 1000;  // 2027-01-01 15:04 UTC
    d.browser = "Firefox 128";
    d.system = "Windows";
    d.client = "203.0.113.9";
    Email e = emails.render(d, kOrigin);
    EXPECT_EQ(e.tag, "auth.new_sign_in");
    EXPECT_EQ(e.subject, "New sign-in to your account on Acme");
    EXPECT_TRUE(has(e.text, "When: January 1, 2027 at 3:04")) << e.text;
    EXPECT_TRUE(has(e.text, "PM UTC")) << e.text;
    EXPECT_TRUE(has(e.text, "Browser: Firefox 128 on Windows\n")) << e.text;
    EXPECT_TRUE(has(e.text, "IP address: 203.0.113.9\n")) << e.text;
    EXPECT_TRUE(has(e.html, "Browser: Firefox 128 on Windows</p>")) << e.html;
    EXPECT_EQ(e.link, "") << "no link without a link base";
    EXPECT_FALSE(has(e.text, "See where your account is signed in"));
    // with the pages: a button to the account page, and its address on a line of the text
    emails.set_link_base(std::string(kBase));
    e = emails.render(d, kOrigin);
    EXPECT_EQ(e.link, "https://app.example.com/auth/account");
    EXPECT_TRUE(has(e.text, "See where your account is signed in: https://app.example.com/auth/account\n")) << e.text;
    EXPECT_FALSE(has(e.text, "Or open this link"));
    EXPECT_TRUE(has(e.html, "<a href=\"https://app.example.com/auth/account\"")) << e.html;
    EXPECT_TRUE(has(e.html, ">Review your sessions</a>")) << e.html;
    // what is not known is said so, never left blank
    d.browser.clear();
    EXPECT_TRUE(has(emails.render(d, kOrigin).text, "Browser: a browser on Windows\n"));
    d.system.clear();
    EXPECT_TRUE(has(emails.render(d, kOrigin).text, "Browser: an unknown browser or app\n"));
    d.browser = "curl 8";
    EXPECT_TRUE(has(emails.render(d, kOrigin).text, "Browser: curl 8\n"));
    // a value in HTML is escaped (the client's address is the module's own, but a template may
    // show anything)
    d.client = "<b>";
    EXPECT_TRUE(has(emails.render(d, kOrigin).html, "IP address: &lt;b&gt;</p>"));
    // in German: the date in German words, the labels translated
    auto de = i18n::Languages::make({"de"});
    ASSERT_TRUE(de) << de.error().message;
    emails.set_languages(de.value());
    d.client = "203.0.113.9";
    d.browser = "Firefox 128";
    d.system = "Windows";
    e = emails.render(d, kOrigin);
    EXPECT_TRUE(has(e.text, "Wann: 1. Januar 2027 um 15:04 UTC")) << e.text;
    EXPECT_TRUE(has(e.text, "Browser: Firefox 128 unter Windows")) << e.text;
    // a template may use the facts, and {{link}} (the account page), but never a code
    EXPECT_TRUE(Emails::parse(Purpose::NewSignIn, "Subject: New sign-in\n\n{{when}} {{device}} {{client}} {{link}}\n"));
    EXPECT_FALSE(Emails::parse(Purpose::NewSignIn, "Subject: New sign-in\n\n{{code}}\n"));
}

TEST(Emails, TheMfaLockedNoticeSaysHowToGetBackIn) {
    Emails emails;
    emails.set_site_name("Acme");
    emails.set_link_base(std::string(kBase));
    Email e = emails.render(delivery(Purpose::MfaLocked, ""), kOrigin);
    EXPECT_EQ(e.tag, "auth.mfa_locked");
    EXPECT_EQ(e.subject, "The second factor of your Acme account was locked");
    EXPECT_TRUE(has(e.text, "Too many wrong second-factor codes were entered in a row")) << e.text;
    EXPECT_TRUE(has(e.text, "sign in with an email code again, which opens it")) << e.text;
    EXPECT_TRUE(has(e.text, "administrator")) << e.text;
    EXPECT_TRUE(has(e.text, "someone may know your password: change it after signing in")) << e.text;
    EXPECT_TRUE(has(e.html, "Too many wrong second-factor codes")) << "the html says it too";
    EXPECT_EQ(e.link, "");
}

TEST(Emails, PreviewsUseTheLinkBase) {
    Emails emails;
    EXPECT_EQ(emails.preview(Purpose::SignIn, kOrigin).link, "");
    emails.set_link_base(std::string(kBase));
    Email e = emails.preview(Purpose::SignIn, kOrigin);
    EXPECT_EQ(e.link, std::string(kBase) + "#token=" + std::string(Emails::kPreviewToken));
    EXPECT_TRUE(has(e.html, e.link));
    EXPECT_EQ(emails.preview(Purpose::EmailChange, kOrigin).link, std::string(kBase) + "#confirm=" + std::string(Emails::kPreviewToken));
    EXPECT_EQ(emails.preview(Purpose::EmailChanged, kOrigin).link, "");
}

TEST(Emails, PurposeByNameOrTag) {
    EXPECT_EQ(purpose_from_text("SignIn"), Purpose::SignIn);
    EXPECT_EQ(purpose_from_text("sign_in"), Purpose::SignIn);
    EXPECT_EQ(purpose_from_text("auth.password_changed"), Purpose::PasswordChanged);
    EXPECT_EQ(purpose_from_text("EmailChangeApproval"), Purpose::EmailChangeApproval);
    EXPECT_EQ(purpose_from_text("MfaLocked"), Purpose::MfaLocked);
    EXPECT_EQ(purpose_from_text("auth.mfa_locked"), Purpose::MfaLocked);
    EXPECT_FALSE(purpose_from_text("signin"));
    EXPECT_FALSE(purpose_from_text(""));
}

TEST(Emails, DeliveryJsonCarriesTheRenderedEmail) {
    Emails emails;
    Delivery d = delivery(Purpose::SignIn);
    std::string body = json::delivery(d, emails.render(d, kOrigin));
    EXPECT_TRUE(has(body, "\"token\":\"ABCD-EFGH-1234\""));
    EXPECT_TRUE(has(body, "\"tag\":\"auth.sign_in\""));
    EXPECT_TRUE(has(body, "\"code\":\"ABCD-EFGH\""));
    EXPECT_TRUE(has(body, "\"subject\":\"Your sign-in code for app.example.com\""));
    EXPECT_TRUE(has(body, "\"html\":\""));  // (the writer escapes < and > in strings)
    EXPECT_TRUE(has(body, "doctype html"));
    EXPECT_TRUE(has(body, "\"link\":\"\",")) << "no link base: an empty link";
    emails.set_link_base(std::string(kBase));
    body = json::delivery(d, emails.render(d, kOrigin));
    EXPECT_TRUE(has(body, "\"code\":\"ABCD-EFGH\",\"link\":\"https://app.example.com/auth/#token=ABCD-EFGH-1234\""));
}

}  // namespace
