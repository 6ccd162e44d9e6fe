#include <gtest/gtest.h>

#include <string>

#include "signin/credentials.hpp"

using namespace signin;

TEST(Credentials, TheSessionCookieIsFoundAmongOthersAndTrimmed) {
    CookieScan s;
    scan_cookie_line("a=1; svc_dev_session= abc ;b=2", "svc_dev_session", s);
    EXPECT_EQ(s.count, 1);
    EXPECT_EQ(s.value, "abc");
}

TEST(Credentials, TwoSessionCookiesAreCountedAcrossLines) {
    CookieScan s;
    scan_cookie_line("svc_dev_session=one", "svc_dev_session", s);
    scan_cookie_line("x=y; svc_dev_session=two", "svc_dev_session", s);
    EXPECT_EQ(s.count, 2) << "cookie tossing must be visible to the caller";
    EXPECT_EQ(s.value, "two");
}

TEST(Credentials, NamesMatchExactlyAndPairsWithoutEqualsAreSkipped) {
    CookieScan s;
    scan_cookie_line("svc_dev_sessionx=1; Svc_dev_session=2; svc_dev_session; =3;;", "svc_dev_session", s);
    EXPECT_EQ(s.count, 0);
    scan_cookie_line("svc_dev_session=", "svc_dev_session", s);
    EXPECT_EQ(s.count, 1);
    EXPECT_TRUE(s.value.empty()) << "an empty value is the caller's to refuse";
}

TEST(Credentials, BearerSchemeIsCaseInsensitiveAndTheTokenTrimmed) {
    EXPECT_EQ(bearer_token("Bearer abc"), "abc");
    EXPECT_EQ(bearer_token("  bEaReR   abc  "), "abc");
    EXPECT_FALSE(bearer_token("Bearer ")) << "no token: no bearer credential at all";
    EXPECT_FALSE(bearer_token("Basic abc"));
    EXPECT_FALSE(bearer_token("Bearer"));
    EXPECT_FALSE(bearer_token("Bearerabc"));
    EXPECT_FALSE(bearer_token(""));
}

namespace {
// without_cookies_to as a string, for the comparisons below
std::string without_cookies(std::string_view line, std::initializer_list<std::string_view> names) {
    std::string kept(2 * line.size(), '\0');
    kept.resize(without_cookies_to(line, names, kept.data()));
    return kept;
}
}  // namespace

TEST(Credentials, WithoutCookieKeepsTheOthersInOrder) {
    EXPECT_EQ(without_cookies("a=1; svc_dev_session=s; b=2", {"svc_dev_session"}), "a=1; b=2");
    EXPECT_EQ(without_cookies("svc_dev_session=s;svc_dev_session=t", {"svc_dev_session"}), "");
    EXPECT_EQ(without_cookies(" a=1 ;; b ; svc_dev_sessionx=3", {"svc_dev_session"}), "a=1; b; svc_dev_sessionx=3");
    EXPECT_EQ(without_cookies("", {"svc_dev_session"}), "");
    EXPECT_EQ(without_cookies("a=1; s=x; d=y; b=2; br=z", {"s", "d", "br"}), "a=1; b=2");
    EXPECT_EQ(without_cookies("s=x; d=y", {"s", "d", "br"}), "");
    EXPECT_EQ(without_cookies("ss=x; d =y; b=2", {"s", "d"}), "ss=x; b=2");
    // the gate's form writes into a buffer of 2 * the line's size: "a;b" grows to "a; b"
    for (std::string line : {"a;b;c;d;e", "a=1;b=2;s=3;c", ";;;", "x", "s=1;s=2", " a = 1 ;b"}) {
        std::string buf(2 * line.size() + 8, '#');
        const std::size_t n = without_cookies_to(line, {"s"}, buf.data());
        EXPECT_LE(n, 2 * line.size()) << line;
        EXPECT_EQ(buf.substr(0, n), without_cookies(line, {"s"})) << line;
        EXPECT_EQ(buf.substr(2 * line.size()), std::string(8, '#')) << "nothing written past the bound: " << line;
    }
    EXPECT_EQ(without_cookies("a;b;c;d;e", {"s"}), "a; b; c; d; e");
}
