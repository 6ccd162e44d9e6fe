// Several accounts in one browser (sessions.hpp): a browser cookie binds the cookie
// sessions a browser made; only that cookie switches between them.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

class BrowserAccountsTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.browser_accounts = 3;
        make(policy, false);
    }
    // A cookie sign-in of `email` from a browser holding `cookies` (its browser cookie and the
    // session cookie it has); the browser's cookies afterwards.
    Session enter(std::string_view email, BrowserCookies &cookies, bool add) {
        clock_->advance(10);  // the list is in order of sign-in
        EXPECT_TRUE(id_->tokens().request_token(Intent::Register, email, ""));
        cookies.add = add;
        auto st = id_->tokens().exchange_step_from(mailer_.last().token, "198.51.100.1", SessionKind::Cookie, "ua",
                                                   &cookies);
        EXPECT_TRUE(st) << st.error().message;
        Session s = std::move(*st.value().session);
        EXPECT_FALSE(s.browser.empty());
        cookies.browser = s.browser;
        cookies.current = s.token;
        return s;
    }
    std::vector<std::string> emails(const BrowserCookies &c) {
        auto list = id_->sessions().accounts(c.browser, c.current);
        EXPECT_TRUE(list) << list.error().message;
        std::vector<std::string> out;
        for (const auto &a : list.value()) out.push_back(a.user.email + (a.active ? "*" : ""));
        return out;
    }
    // A value of a browser cookie's shape (43 base64url characters) that the module never gave out.
    static std::string enc_like_cookie() { return std::string(43, 'A'); }
    bool live(const Session &s) { return static_cast<bool>(id_->sessions().authenticate_from(s.token, "c")); }
};

TEST_F(BrowserAccountsTest, AddKeepsTheCurrentAccountAndSignInWithoutAddReplacesIt) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    const std::string cookie(b.browser.reveal());
    Session bob = enter("bob@example.com", b, true);
    EXPECT_NE(std::string(b.browser.reveal()), cookie) << "a new browser cookie at every sign-in";
    EXPECT_TRUE(id_->sessions().accounts(Secret(cookie), Secret())->empty()) << "the old one names nothing";
    EXPECT_TRUE(live(ann));
    EXPECT_EQ(emails(b), (std::vector<std::string>{"ann@example.com", "bob@example.com*"}));
    Session cat = enter("cat@example.com", b, false);
    EXPECT_FALSE(live(bob)) << "a sign-in without add takes the place of the active session";
    EXPECT_TRUE(live(ann));
    EXPECT_EQ(emails(b), (std::vector<std::string>{"ann@example.com", "cat@example.com*"}));
    EXPECT_TRUE(live(cat));
}

TEST_F(BrowserAccountsTest, SwitchGivesTheOtherSessionsSecretOnlyToItsBrowser) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    Session bob = enter("bob@example.com", b, true);
    auto sw = id_->sessions().switch_to(b.browser, ann.id, "c");
    ASSERT_TRUE(sw) << sw.error().message;
    EXPECT_EQ(sw->token.reveal(), ann.token.reveal()) << "the same session, not a new one";
    EXPECT_EQ(sw->user.email, "ann@example.com");
    b.current = sw->token;
    EXPECT_EQ(emails(b), (std::vector<std::string>{"ann@example.com*", "bob@example.com"}));

    // another browser: its own cookie opens nothing of this one
    BrowserCookies other;
    enter("eve@example.com", other, false);
    auto no = id_->sessions().switch_to(other.browser, bob.id, "c");
    ASSERT_FALSE(no);
    EXPECT_EQ(no.error().code, Code::NotFound);
    EXPECT_EQ(id_->sessions().switch_to(Secret(), bob.id, "c").error().code, Code::NotFound);
    EXPECT_EQ(id_->sessions().switch_to(b.browser, "0190b0c0-0000-7000-8000-000000000000", "c").error().code,
              Code::NotFound);
    EXPECT_EQ(emails(other), (std::vector<std::string>{"eve@example.com*"}));
}

// Cookie fixation: a browser cookie somebody planted is never adopted. A value the module never
// gave out is replaced at the sign-in; one it gave out (to the planter's own browser) moves what
// it had to the victim's new cookie, and the planter's copy lists and switches to nothing.
TEST_F(BrowserAccountsTest, APlantedBrowserCookieIsWorthlessOnceTheVictimSignsIn) {
    const std::string made_up = enc_like_cookie();
    BrowserCookies victim;
    victim.browser = Secret(made_up);
    Session ann = enter("ann@example.com", victim, false);
    EXPECT_NE(std::string(victim.browser.reveal()), made_up);
    EXPECT_TRUE(id_->sessions().accounts(Secret(made_up), Secret())->empty());
    EXPECT_EQ(id_->sessions().switch_to(Secret(made_up), ann.id, "c").error().code, Code::NotFound);

    // the planter signs in in their own browser, then plants that browser's cookie
    BrowserCookies planter;
    Session eve = enter("eve@example.com", planter, false);
    const std::string planted(planter.browser.reveal());
    BrowserCookies second;
    second.browser = Secret(planted);
    Session bob = enter("bob@example.com", second, true);
    EXPECT_NE(std::string(second.browser.reveal()), planted);
    EXPECT_TRUE(id_->sessions().accounts(Secret(planted), Secret())->empty()) << "the planted value lists nothing";
    EXPECT_EQ(id_->sessions().switch_to(Secret(planted), bob.id, "c").error().code, Code::NotFound);
    EXPECT_TRUE(live(eve) && live(bob) && live(ann));
}

TEST_F(BrowserAccountsTest, TheStoreAloneOpensNoSession) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    auto rec = store_->read()->session_by_id(ann.id);
    ASSERT_TRUE(rec);
    ASSERT_EQ(rec->browser.size(), 38u);
    EXPECT_EQ(rec->browser, record_key(b.browser.reveal())) << "a digest, not the cookie";
    EXPECT_EQ(rec->browser.substr(6), secret_hash(b.browser.reveal()));
    EXPECT_EQ(rec->browser_sealed.find(std::string(ann.token.reveal())), std::string::npos);
    EXPECT_EQ(rec->browser_sealed.find(std::string(b.browser.reveal())), std::string::npos);
    // a guessed browser cookie whose digest were known still does not open it
    EXPECT_FALSE(id_->sessions().switch_to(Secret(std::string(rec->browser.size(), 'x')), ann.id, "c"));
}

// Issue #20: a new browser's key begins with the time its cookie was made (6 bytes, big-endian
// milliseconds), so that the browsers made together are filed together.
TEST_F(BrowserAccountsTest, ANewBrowsersKeyBeginsWithItsTime) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    const std::string key = record_key(b.browser.reveal());
    std::uint64_t t = 0;
    for (int i = 0; i < 6; ++i) t = t << 8 | static_cast<unsigned char>(key[i]);
    EXPECT_EQ(static_cast<Millis>(t), clock_->now());
    BrowserCookies later;
    enter("bob@example.com", later, false);
    EXPECT_LT(key, record_key(later.browser.reveal())) << "a later browser sorts after";
}

// A session that an earlier build of 0.1.0 filed under the browser cookie's digest alone is still
// listed, switched to and signed out with that browser's cookie, beside the ones filed since.
TEST_F(BrowserAccountsTest, SessionsFiledUnderAnEarlierBuildsBrowserDigestStillBelongToTheBrowser) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    {
        auto rec = store_->read()->session_by_id(ann.id);
        ASSERT_TRUE(rec);
        rec->browser = secret_hash(b.browser.reveal());  // what the earlier build wrote
        auto w = store_->write();
        w->put_session(*rec);
        w->commit();
    }
    ASSERT_EQ(store_->read()->session_by_id(ann.id)->browser.size(), 32u);
    Session bob = enter("bob@example.com", b, true);
    EXPECT_EQ(store_->read()->session_by_id(bob.id)->browser.size(), 38u);
    EXPECT_EQ(emails(b), (std::vector<std::string>{"ann@example.com", "bob@example.com*"}));
    auto sw = id_->sessions().switch_to(b.browser, ann.id, "c");
    ASSERT_TRUE(sw) << sw.error().message;
    EXPECT_EQ(sw->token.reveal(), ann.token.reveal());
    ASSERT_TRUE(id_->sessions().logout_browser(b.browser, nullptr, "c"));
    EXPECT_FALSE(live(ann));
    EXPECT_FALSE(live(bob));
}

TEST_F(BrowserAccountsTest, OneSessionPerAccountAndTheLeastRecentlyUsedGoesBeyondTheLimit) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    clock_->advance(1000);
    Session bob = enter("bob@example.com", b, true);
    clock_->advance(1000);
    Session again = enter("ann@example.com", b, true);
    EXPECT_FALSE(live(ann)) << "the same account signed in again replaces its older session";
    EXPECT_EQ(emails(b), (std::vector<std::string>{"bob@example.com", "ann@example.com*"}));
    clock_->advance(1000);
    Session cat = enter("cat@example.com", b, true);
    clock_->advance(1000);
    ASSERT_TRUE(id_->sessions().switch_to(b.browser, bob.id, "c"));  // bob used last
    clock_->advance(1000);
    Session dan = enter("dan@example.com", b, true);  // a fourth with a limit of 3
    EXPECT_FALSE(live(again)) << "ann's session was used least recently";
    EXPECT_TRUE(live(bob) && live(cat) && live(dan));
    EXPECT_EQ(emails(b).size(), 3u);
    bool evicted = false;
    for (const auto &e : store_->read()->audit(100)) evicted |= e.kind == "session.evicted" && e.detail == again.id;
    EXPECT_TRUE(evicted);
}

TEST_F(BrowserAccountsTest, LogoutAllEndsEverySessionOfThisBrowserOnly) {
    BrowserCookies b, other;
    Session ann = enter("ann@example.com", b, false);
    Session bob = enter("bob@example.com", b, true);
    Session elsewhere = enter("ann@example.com", other, false);
    ASSERT_TRUE(id_->sessions().logout_browser(b.browser, nullptr, "c"));
    EXPECT_FALSE(live(ann));
    EXPECT_FALSE(live(bob));
    EXPECT_TRUE(live(elsewhere)) << "the same account in another browser stays";
    EXPECT_TRUE(emails(b).empty());
}

TEST_F(BrowserAccountsTest, DeadSessionsAndSuspendedAccountsAreNotListedOrSwitchedTo) {
    BrowserCookies b;
    Session ann = enter("ann@example.com", b, false);
    Session bob = enter("bob@example.com", b, true);
    ASSERT_TRUE(id_->set_suspended("default", "ann@example.com", true));
    EXPECT_EQ(emails(b), (std::vector<std::string>{"bob@example.com*"}));
    EXPECT_EQ(id_->sessions().switch_to(b.browser, ann.id, "c").error().code, Code::NotFound);
    ASSERT_TRUE(id_->set_suspended("default", "ann@example.com", false));
    ASSERT_TRUE(id_->sessions().revoke_session(principal(bob), bob.id, "c"));
    EXPECT_EQ(emails(b), (std::vector<std::string>{"ann@example.com"}));
    EXPECT_EQ(id_->sessions().switch_to(b.browser, bob.id, "c").error().code, Code::NotFound);
    clock_->advance(id_->policy().session_idle + 1);
    EXPECT_TRUE(emails(b).empty()) << "idle sessions are not accounts of the browser";
    EXPECT_EQ(id_->sessions().switch_to(b.browser, ann.id, "c").error().code, Code::NotFound);
}

TEST_F(BrowserAccountsTest, BearerTokensAndCallsWithoutABrowserAreNotBound) {
    BrowserCookies b;
    enter("ann@example.com", b, false);
    ASSERT_TRUE(id_->tokens().request_token(Intent::Login, "ann@example.com", ""));
    auto bearer = id_->tokens().exchange_step_from(mailer_.last().token, "c", SessionKind::Bearer, "ua", &b);
    ASSERT_TRUE(bearer && bearer->session);
    EXPECT_TRUE(bearer->session->browser.empty());
    EXPECT_TRUE(store_->read()->session_by_id(bearer->session->id)->browser.empty());
    EXPECT_EQ(emails(b).size(), 1u) << "a bearer token is no account of the browser";
}

}  // namespace
