// The new-sign-in notice (signin_new_signin_notice): the browsers an account was signed in from,
// kept as a bounded set of digests in the session's transaction, and the NewSignIn notice written
// to the outbox when a browser or app is new to an account that signed in before. On both stores
// (SIGNIN_TEST_PG).
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/known_browsers.hpp"
#include "signin/outbox.hpp"

namespace signin {
namespace {

constexpr std::string_view kFirefox =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0";

class KnownBrowsersTest : public testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.new_signin_notice = true;
        start(policy);
    }
    void start(const Policy &policy) {
        make(policy);
        OutboxSettings s;
        s.key.fill(9);
        s.hold = 60000;
        s.retries = 3;
        id_->use_outbox(s);
    }
    // A cookie sign-in of `email` from a browser that brings `known` (empty: none); the session.
    Session enter(std::string_view email, const Secret &known, SessionKind kind = SessionKind::Cookie) {
        clock_->advance(1000);
        EXPECT_TRUE(id_->tokens().request_token(Intent::Register, email, ""));
        BrowserCookies b;
        b.known = known;
        auto st = id_->tokens().exchange_step_from(mailer_.last().token, "198.51.100.1", kind, kFirefox,
                                                   kind == SessionKind::Cookie ? &b : nullptr);
        EXPECT_TRUE(st) << st.error().message;
        return std::move(*st.value().session);
    }
    // The NewSignIn notices waiting in the outbox (claimed: each is seen once).
    std::vector<Delivery> notices() {
        std::vector<Delivery> out;
        auto items = id_->outbox().claim_due(100);
        EXPECT_TRUE(items) << items.error().message;
        for (auto &i : items.value()) {
            if (i.delivery.purpose == Purpose::NewSignIn) out.push_back(i.delivery);
        }
        return out;
    }
    std::vector<KnownBrowser> set_of(std::string_view user_id) {
        auto state = store_->read()->counter(known_key(user_id));
        if (!state) return {};
        return decode_known(*state).value_or(std::vector<KnownBrowser>{});
    }
};

TEST_F(KnownBrowsersTest, TheFirstSignInIsToldNothingAndAnotherBrowserOnce) {
    Session first = enter("ann@example.com", {});
    ASSERT_FALSE(first.known.empty()) << "a cookie sign-in gets the known-browser cookie";
    EXPECT_TRUE(plausible_secret(first.known.reveal()));
    EXPECT_TRUE(notices().empty()) << "never for the account's first sign-in";
    EXPECT_EQ(set_of(first.user.id).size(), 1u);

    Session again = enter("ann@example.com", first.known);
    EXPECT_EQ(again.known.reveal(), first.known.reveal()) << "the same browser keeps its value";
    EXPECT_TRUE(notices().empty()) << "the same browser again";

    const Millis at = clock_->now() + 1000;
    Session other = enter("ann@example.com", {});
    EXPECT_NE(other.known.reveal(), first.known.reveal());
    auto sent = notices();
    ASSERT_EQ(sent.size(), 1u) << "another browser: one notice";
    EXPECT_EQ(sent[0].email, "ann@example.com");
    EXPECT_EQ(sent[0].signed_in_at, at);
    EXPECT_EQ(sent[0].browser, "Firefox 128");
    EXPECT_EQ(sent[0].system, "Windows");
    EXPECT_EQ(sent[0].client, "198.51.100.1");
    EXPECT_TRUE(sent[0].token.empty()) << "a notice carries no token";
    EXPECT_TRUE(notices().empty()) << "claimed once";

    // both browsers are known now
    enter("ann@example.com", first.known);
    enter("ann@example.com", other.known);
    EXPECT_TRUE(notices().empty());
    // the digests only: no cookie value is stored
    const std::string bytes = stored_bytes();
    EXPECT_EQ(bytes.find(first.known.reveal()), std::string::npos);
    EXPECT_EQ(bytes.find(other.known.reveal()), std::string::npos);
}

TEST_F(KnownBrowsersTest, AValueTheAccountNeverSawIsNotKnown) {
    Session first = enter("bob@example.com", {});
    notices();
    // made up, or another account's: not this account's browser
    const Secret forged(std::string(43, 'A'));
    Session s = enter("bob@example.com", forged);
    EXPECT_EQ(notices().size(), 1u) << "a made-up value counts as new";
    EXPECT_EQ(s.known.reveal(), forged.reveal()) << "taken as it is: one browser, one value for all its accounts";
    Session carol = enter("carol@example.com", first.known);  // carol's first sign-in, in bob's browser
    EXPECT_TRUE(notices().empty());
    EXPECT_EQ(carol.known.reveal(), first.known.reveal());
    enter("bob@example.com", first.known);
    EXPECT_TRUE(notices().empty()) << "carol's sign-in did not make bob forget the browser";
    // a value of the wrong shape is replaced
    Session odd = enter("bob@example.com", Secret(std::string("short")));
    EXPECT_TRUE(plausible_secret(odd.known.reveal()));
    EXPECT_EQ(notices().size(), 1u);
}

TEST_F(KnownBrowsersTest, ABearerSignInIsAlwaysNewAndHasNoCookie) {
    Session b = enter("dan@example.com", {}, SessionKind::Bearer);
    EXPECT_TRUE(b.known.empty());
    EXPECT_TRUE(notices().empty()) << "the account's first sign-in";
    enter("dan@example.com", {}, SessionKind::Bearer);
    EXPECT_EQ(notices().size(), 1u) << "an app has no browser to recognise";
    Session c = enter("dan@example.com", {});
    EXPECT_EQ(notices().size(), 1u) << "nor a browser after it";
    EXPECT_EQ(set_of(c.user.id).size(), 1u) << "only browsers are remembered";
}

TEST_F(KnownBrowsersTest, TheSetIsBoundedAndForgetsTheOneUsedLongestAgo) {
    Session oldest = enter("eve@example.com", {});
    std::vector<Secret> others;
    for (std::size_t i = 1; i < kMaxKnown; i++) others.push_back(enter("eve@example.com", {}).known);
    EXPECT_EQ(set_of(oldest.user.id).size(), kMaxKnown);
    EXPECT_EQ(notices().size(), kMaxKnown - 1);
    enter("eve@example.com", others.front());  // used again: no longer the oldest but one
    enter("eve@example.com", {});               // one more: the oldest goes
    EXPECT_EQ(set_of(oldest.user.id).size(), kMaxKnown);
    EXPECT_EQ(notices().size(), 1u);
    enter("eve@example.com", others.front());
    EXPECT_TRUE(notices().empty()) << "used recently: kept";
    enter("eve@example.com", oldest.known);
    EXPECT_EQ(notices().size(), 1u) << "the one used longest ago was forgotten";
}

TEST_F(KnownBrowsersTest, TheSetGoesWithTheAccountAndExpires) {
    Session s = enter("fay@example.com", {});
    EXPECT_FALSE(set_of(s.user.id).empty());
    ASSERT_TRUE(store_->read()->counter(known_key(s.user.id)));
    clock_->advance(1000);
    Principal p = principal(s);
    ASSERT_TRUE(id_->accounts().delete_account(p, "c"));
    EXPECT_FALSE(store_->read()->counter(known_key(s.user.id))) << "deleted with the account";

    Session g = enter("gus@example.com", {});
    {
        auto txn = store_->write();
        txn->purge_expired(clock_->now() + kKeepKnown - 1, 100);
        txn->commit();
    }
    EXPECT_TRUE(store_->read()->counter(known_key(g.user.id))) << "kept while it lasts";
    {
        auto txn = store_->write();
        txn->purge_expired(clock_->now() + kKeepKnown + 1, 100);
        txn->commit();
    }
    EXPECT_FALSE(store_->read()->counter(known_key(g.user.id))) << "forgotten after the last sign-in's keep";
    enter("gus@example.com", {});
    EXPECT_TRUE(notices().empty()) << "a forgotten set starts again without a notice";
}

TEST_F(KnownBrowsersTest, OffMeansNoCookieNoSetNoNotice) {
    Policy policy = open_policy();
    start(policy);
    Session s = enter("hal@example.com", {});
    enter("hal@example.com", {});
    EXPECT_TRUE(s.known.empty());
    EXPECT_TRUE(notices().empty());
    EXPECT_FALSE(store_->read()->counter(known_key(s.user.id)));
}

TEST(KnownBrowsers, TheStateRoundTripsAndABadOneIsRefused) {
    std::vector<KnownBrowser> set = {{std::string(32, 'a'), 1}, {std::string(32, 'b'), 1798761600000}};
    auto back = decode_known(encode_known(set));
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[1].hash, std::string(32, 'b'));
    EXPECT_EQ((*back)[1].last_at, 1798761600000);
    EXPECT_TRUE(decode_known(encode_known({})));
    EXPECT_FALSE(decode_known(""));
    EXPECT_FALSE(decode_known(std::string(1, '\2')));
    EXPECT_FALSE(decode_known(encode_known(set).substr(0, 30)));
}

}  // namespace
}  // namespace signin
