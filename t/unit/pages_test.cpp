// The ready-made pages (signin/pages.hpp): templates render completely and escaped, assets are
// served with their types, and nothing on a page needs an inline script.
#include <gtest/gtest.h>

#include <cctype>

#include "signin/pages.hpp"

using namespace signin::pages;

namespace {

Settings sample() {
    Settings s;
    s.site_name = "Acme <Tools> & \"Co\"";
    s.passwords = true;
    s.registration = false;
    s.resend_seconds = 45;
    s.token_minutes = 15;
    s.fresh_minutes = 7;
    return s;
}

}  // namespace

TEST(Pages, EveryPlaceholderIsFilled) {
    for (Page p : {Page::SignIn, Page::Account, Page::Forbidden, Page::Unavailable, Page::Admin}) {
        const std::string html = render(p, sample());
        ASSERT_FALSE(html.empty());
        EXPECT_EQ(html.find("{{"), std::string::npos) << html.substr(html.find("{{"), 40);
        EXPECT_EQ(html.find("}}"), std::string::npos);
        EXPECT_EQ(html.rfind("<!doctype html>", 0), 0U);
        EXPECT_NE(html.find("<html lang=\"en\" dir=\"ltr\">"), std::string::npos);
        EXPECT_NE(html.find("name=\"viewport\""), std::string::npos);
    }
}

TEST(Pages, SiteNameIsEscaped) {
    const std::string html = render(Page::SignIn, sample());
    EXPECT_EQ(html.find("<Tools>"), std::string::npos);
    EXPECT_NE(html.find("Acme &lt;Tools&gt; &amp; &quot;Co&quot;"), std::string::npos);
}

TEST(Pages, SettingsReachThePage) {
    const std::string html = render(Page::SignIn, sample());
    EXPECT_NE(html.find("data-passwords=\"on\""), std::string::npos);
    EXPECT_NE(html.find("data-registration=\"off\""), std::string::npos);
    EXPECT_NE(html.find("data-resend-seconds=\"45\""), std::string::npos);
    EXPECT_NE(html.find("data-remember-days=\"30\""), std::string::npos);
    EXPECT_NE(html.find("valid for 15 minutes"), std::string::npos);
    Settings s = sample();
    s.passwords = false;
    s.registration = true;
    const std::string other = render(Page::SignIn, s);
    EXPECT_NE(other.find("data-passwords=\"off\""), std::string::npos);
    EXPECT_NE(other.find("data-registration=\"on\""), std::string::npos);
    EXPECT_NE(render(Page::Account, sample()).find("in the last 7 minutes"), std::string::npos);
    s.token_minutes = 1;
    s.fresh_minutes = 1;
    EXPECT_NE(render(Page::SignIn, s).find("valid for 1 minute."), std::string::npos);
    EXPECT_NE(render(Page::Account, s).find("in the last 1 minute."), std::string::npos);
}

TEST(Pages, SiteStylesheetComesAfterTheModules) {
    Settings s = sample();
    EXPECT_EQ(render(Page::SignIn, s).find("rel=\"stylesheet\" href=\"/"), std::string::npos);
    s.stylesheet = "/static/site.css?a=1&b=\"2\"";
    const std::string html = render(Page::Account, s);
    const auto own = html.find("assets/pages.css");
    const auto site = html.find("<link rel=\"stylesheet\" href=\"/static/site.css?a=1&amp;b=&quot;2&quot;\">");
    ASSERT_NE(own, std::string::npos);
    ASSERT_NE(site, std::string::npos);
    EXPECT_LT(own, site);
}

TEST(Pages, AssetsAreVersionedByTheirContent) {
    const std::string html = render(Page::SignIn, sample());
    for (const char *name : {"pages.css", "signin.js"}) {
        const Asset *a = asset(name);
        ASSERT_NE(a, nullptr) << name;
        EXPECT_EQ(a->hash.size(), 12U);
        EXPECT_NE(html.find(std::string("assets/") + name + "?v=" + std::string(a->hash)), std::string::npos) << name;
    }
    ASSERT_NE(asset("account.js"), nullptr);
    ASSERT_NE(asset("common.js"), nullptr);
    EXPECT_EQ(asset("pages.css")->content_type, "text/css; charset=utf-8");
    EXPECT_EQ(asset("signin.js")->content_type, "text/javascript; charset=utf-8");
}

TEST(Pages, TemplatesAndUnknownNamesAreNotAssets) {
    EXPECT_EQ(asset("signin.html"), nullptr);
    EXPECT_EQ(asset("account.html"), nullptr);
    EXPECT_EQ(asset(""), nullptr);
    EXPECT_EQ(asset("../signin.js"), nullptr);
    EXPECT_EQ(asset("signin.js/"), nullptr);
    EXPECT_EQ(asset("nope.js"), nullptr);
}

namespace {

// Whether html has a <script> element without a src (an inline script).
bool has_inline_script(const std::string &html) {
    for (std::size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) {
        const std::size_t end = html.find('>', at);
        if (html.substr(at, end - at).find(" src=") == std::string::npos) return true;
    }
    return false;
}

// Whether html has an event handler attribute ( onclick=, onload= ...).
bool has_handler(const std::string &html) {
    for (std::size_t at = html.find(" on"); at != std::string::npos; at = html.find(" on", at + 1)) {
        std::size_t i = at + 3;
        while (i < html.size() && std::islower(static_cast<unsigned char>(html[i]))) i++;
        if (i > at + 3 && i < html.size() && html[i] == '=') return true;
    }
    return false;
}

// The text a person sees: the html without comments and tags.
std::string visible_text(const std::string &html) {
    std::string out;
    for (std::size_t i = 0; i < html.size();) {
        if (html.compare(i, 4, "<!--") == 0) {
            const std::size_t end = html.find("-->", i);
            i = end == std::string::npos ? html.size() : end + 3;
        } else if (html[i] == '<') {
            const std::size_t end = html.find('>', i);
            i = end == std::string::npos ? html.size() : end + 1;
            out += ' ';
        } else {
            out += html[i++];
        }
    }
    return out;
}

}  // namespace

// CSP script-src 'self' without 'unsafe-inline': no inline script, no event handler attribute,
// no javascript: URL, no inline style attribute (style-src 'self').
TEST(Pages, NothingInlineThatTheCspRefuses) {
    EXPECT_TRUE(has_inline_script("<p><script>alert(1)</script>"));
    EXPECT_FALSE(has_inline_script("<script type=\"module\" src=\"x.js\"></script>"));
    EXPECT_TRUE(has_handler("<img src=x onerror=alert(1)>"));
    EXPECT_FALSE(has_handler("<p>once upon a time = now</p>"));
    for (Page p : {Page::SignIn, Page::Account, Page::Forbidden, Page::Unavailable, Page::Admin}) {
        const std::string html = render(p, sample());
        EXPECT_FALSE(has_inline_script(html));
        EXPECT_FALSE(has_handler(html));
        EXPECT_EQ(html.find("javascript:"), std::string::npos);
        EXPECT_EQ(html.find(" style="), std::string::npos);
        EXPECT_EQ(html.find("<style"), std::string::npos);
        EXPECT_EQ(html.find("http://"), std::string::npos);   // no third-party asset
        EXPECT_EQ(html.find("https://"), std::string::npos);
    }
    const std::string csp(content_security_policy());
    EXPECT_EQ(csp.find("unsafe"), std::string::npos);
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
}

// Copy: a visitor is asked for a "code", never a "token".
TEST(Pages, CopySaysCodeNotToken) {
    for (Page p : {Page::SignIn, Page::Account, Page::Forbidden, Page::Unavailable, Page::Admin}) {
        const std::string text = visible_text(render(p, sample()));
        EXPECT_EQ(text.find("token"), std::string::npos);
        EXPECT_EQ(text.find("Token"), std::string::npos);
    }
}

TEST(Pages, ForbiddenNamesTheAccountAndComesBack) {
    Settings s = sample();
    s.account = "eve<x>@example.com";
    s.login_url = "/auth/";
    s.return_to = "/admin/?a=1&b=\"<2>\"";
    const std::string html = render(Page::Forbidden, s);
    EXPECT_EQ(html.find("{{"), std::string::npos);
    EXPECT_NE(html.find("eve&lt;x&gt;@example.com"), std::string::npos);
    EXPECT_NE(html.find("href=\"/auth/?return_to=/admin/%3Fa%3D1%26b%3D%22%3C2%3E%22\""), std::string::npos);
    EXPECT_NE(html.find("href=\"/auth/assets/pages.css?v="), std::string::npos);
    EXPECT_NE(html.find("src=\"/auth/assets/forbidden.js?v="), std::string::npos);
    EXPECT_EQ(html.find("\"<2>\""), std::string::npos);
    s.login_url = "/signin?from=gate";
    const std::string q = render(Page::Forbidden, s);
    EXPECT_NE(q.find("href=\"/signin?from=gate&amp;return_to=/admin/"), std::string::npos);
    EXPECT_NE(q.find("href=\"/assets/pages.css"), std::string::npos);
}

TEST(Pages, ForbiddenPolicyAllowsAnAbsoluteLoginUrlsOriginOnly) {
    EXPECT_EQ(content_security_policy("/auth/"), std::string(content_security_policy()));
    const std::string csp = content_security_policy("https://login.example:8443/auth/?x=1");
    EXPECT_NE(csp.find("script-src 'self' https://login.example:8443;"), std::string::npos) << csp;
    EXPECT_NE(csp.find("style-src 'self' https://login.example:8443;"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("connect-src 'self';"), csp.find("connect-src"));
    EXPECT_EQ(content_security_policy("javascript:alert(1)"), std::string(content_security_policy()));
    EXPECT_EQ(content_security_policy("https://a.example;script-src *"), std::string(content_security_policy()));
    const std::string html = [] {
        Settings s;
        s.login_url = "https://login.example/auth/";
        return render(Page::Forbidden, s);
    }();
    EXPECT_NE(html.find("href=\"https://login.example/auth/assets/pages.css"), std::string::npos);
}

// ---------------------------------------------------------------- the dev mailbox

namespace {

MailboxEmail mail(unsigned long long seq, std::string code) {
    MailboxEmail e;
    e.seq = seq;
    e.received_ms = 1714566896789LL + static_cast<long long>(seq) * 1000;  // 2024-05-01T12:34:56.789Z
    e.email = "you@example.com";
    e.subject = "Your code";
    e.purpose = "Login";
    e.code = std::move(code);
    e.link = "https://app.example/in?t=1&u=2";
    e.text = "Your code is <b>";
    e.html = true;
    return e;
}

}  // namespace

TEST(Mailbox, EmptyMailboxSaysHowToFillIt) {
    const std::string html = render_mailbox({});
    EXPECT_EQ(html.rfind("<!doctype html>", 0), 0U);
    EXPECT_NE(html.find("No email yet."), std::string::npos);
    EXPECT_EQ(html.find("<article"), std::string::npos);
    EXPECT_EQ(html.find("{{"), std::string::npos);
    EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
}

TEST(Mailbox, NewestFirstOpenAndEscaped) {
    const std::string html = render_mailbox({mail(3, "111111"), mail(4, "222<2>")});
    EXPECT_EQ(html.find("No email yet."), std::string::npos);
    EXPECT_EQ(html.find("{{"), std::string::npos);
    EXPECT_EQ(html.find("}}"), std::string::npos);
    const auto newest = html.find("<article id=\"email-4\"><details open>");
    const auto older = html.find("<article id=\"email-3\"><details>");
    ASSERT_NE(newest, std::string::npos);
    ASSERT_NE(older, std::string::npos);
    EXPECT_LT(newest, older);
    EXPECT_NE(html.find("<p class=\"code\">222&lt;2&gt;</p>"), std::string::npos);
    EXPECT_NE(html.find("<pre>Your code is &lt;b&gt;</pre>"), std::string::npos);
    EXPECT_NE(html.find("<a href=\"https://app.example/in?t=1&amp;u=2\" rel=\"noreferrer\">"), std::string::npos);
    EXPECT_NE(html.find("<iframe sandbox src=\"?body=4\""), std::string::npos);
    EXPECT_NE(html.find("<time datetime=\"2024-05-01T12:35:00.789Z\">12:35:00 <small>2024-05-01</small></time>"),
              std::string::npos);
    EXPECT_NE(html.find("to you@example.com · <span class=\"purpose\">Login</span>"), std::string::npos);
}

TEST(Mailbox, OnlyWhatTheEmailHas) {
    MailboxEmail e;
    e.seq = 0;
    e.email = "a@b.example";
    e.link = "javascript:alert(1)";  // a delivery POSTed by hand: shown, never a link
    const std::string html = render_mailbox({e});
    EXPECT_NE(html.find("<span class=\"subject\">(no subject)</span>"), std::string::npos);
    EXPECT_NE(html.find("<p class=\"link\">javascript:alert(1)</p>"), std::string::npos);
    EXPECT_EQ(html.find("<a href=\"javascript"), std::string::npos);
    for (const char *absent : {"<h2>Code</h2>", "<h2>HTML</h2>", "<h2>Text</h2>", "class=\"purpose\""}) {
        EXPECT_EQ(html.find(absent), std::string::npos) << absent;
    }
    EXPECT_EQ(mailbox_time(7), "1970-01-01T00:00:00.007Z");
}

TEST(Mailbox, PolicyAllowsExactlyThePageStyle) {
    const std::string &csp = mailbox_policy();
    EXPECT_EQ(csp.rfind("default-src 'none'; style-src 'sha256-", 0), 0U);
    EXPECT_NE(csp.find("'; frame-src 'self'; frame-ancestors 'none'"), std::string::npos);
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
    const std::string html = render_mailbox({});
    EXPECT_EQ(html.find(" style=\""), std::string::npos);  // style attributes would need 'unsafe-inline'
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_NE(std::string(mailbox_body_policy()).find("sandbox"), std::string::npos);
}
