#include <gtest/gtest.h>
#include <sodium.h>

#include <ctime>
#include <set>
#include <sstream>

#include "core/encoding.hpp"
#include "signin/secret.hpp"

using namespace signin;

TEST(Encoding, Base64urlRoundTripHasNoPaddingOrUnsafeChars) {
    const unsigned char raw[] = {0xfb, 0xff, 0x00, 0x10, 0x3e};
    std::string text = enc::base64url(raw, sizeof raw);
    EXPECT_EQ(text, "-_8AED4");
    auto back = enc::base64url_decode(text);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, std::string(reinterpret_cast<const char *>(raw), sizeof raw));
    EXPECT_FALSE(enc::base64url_decode("ab+/"));
    EXPECT_FALSE(enc::base64url_decode("abc="));
}

TEST(Encoding, Rfc3339) {
    EXPECT_EQ(enc::rfc3339(0), "1970-01-01T00:00:00.000Z");
    EXPECT_EQ(enc::rfc3339(1795000000123), "2026-11-18T11:06:40.123Z");
}

TEST(Encoding, Rfc3339ReadBack) {
    EXPECT_EQ(enc::parse_rfc3339("1970-01-01T00:00:00.000Z"), 0);
    EXPECT_EQ(enc::parse_rfc3339("2026-11-18T11:06:40.123Z"), 1795000000123);
    EXPECT_EQ(enc::parse_rfc3339("2026-11-18T11:06:40Z"), 1795000000000);
    EXPECT_EQ(enc::parse_rfc3339("2024-02-29T00:00:00Z"), 1709164800000);
    for (const char *bad : {"", "2026-11-18", "2026-11-18T11:06:40", "2026-11-18T11:06:40+01:00", "2026-13-01T00:00:00Z",
                            "2026-04-31T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-18T24:00:00Z",
                            "1969-12-31T23:59:59Z", "2026-11-18t11:06:40Z", "2026-11-18T11:06:40.12Z",
                            "2026-1a-18T11:06:40Z", "1795000000000"}) {
        EXPECT_FALSE(enc::parse_rfc3339(bad)) << bad;
    }
}

TEST(Encoding, Uuid7IsTimeOrderedVersion7) {
    std::string a = enc::uuid7(1795000000000);
    std::string b = enc::uuid7(1795000000001);
    EXPECT_EQ(a.size(), 36u);
    EXPECT_EQ(a[14], '7');
    EXPECT_TRUE(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b');
    EXPECT_LT(a, b);
}

TEST(Encoding, RandomSecretsAreLongAndDistinct) {
    ASSERT_GE(sodium_init(), 0);
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        std::string s = enc::random_secret();
        EXPECT_EQ(s.size(), 43u);  // 256 bits
        EXPECT_EQ(s.find_first_not_of(
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                  std::string::npos);
        seen.insert(s);
    }
    EXPECT_EQ(seen.size(), 1000u);
    EXPECT_GE(enc::random_secret(4).size(), 22u);  // never below 128 bits
}

TEST(Secret, PrintsRedactedAndWipesOnMove) {
    Secret s("hunter2-very-secret");
    std::ostringstream os;
    os << s;
    EXPECT_EQ(os.str(), "[redacted]");
    EXPECT_EQ(os.str().find("hunter2"), std::string::npos);
    Secret t(std::move(s));
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(t.reveal(), "hunter2-very-secret");
}

TEST(Encoding, Rfc3339MatchesGmtimeAcrossCenturies) {
    // leap days, century rules and the year 2000, against the C library's calendar
    for (std::int64_t s : {951782400LL, 951868799LL, 4107542400LL, 1709164800LL, 86399LL, 253402300799LL}) {
        std::time_t t = static_cast<std::time_t>(s);
        std::tm tm{};
        gmtime_r(&t, &tm);
        char want[40];
        std::strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S", &tm);
        EXPECT_EQ(enc::rfc3339(s * 1000 + 7), std::string(want) + ".007Z");
    }
}
