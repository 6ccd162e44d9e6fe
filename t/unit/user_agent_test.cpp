// The User-Agent summary of the new-sign-in notice: real headers of the common browsers, and
// headers made to smuggle text into the email.
#include <gtest/gtest.h>

#include <string>

#include "signin/user_agent.hpp"

using namespace signin;

namespace {

struct UaCase {
    const char *ua;
    const char *browser;
    const char *system;
};

class UserAgentCases : public ::testing::TestWithParam<UaCase> {};

TEST_P(UserAgentCases, Summarized) {
    const UaCase &c = GetParam();
    UserAgentSummary s = summarize_user_agent(c.ua);
    EXPECT_EQ(s.browser, c.browser) << c.ua;
    EXPECT_EQ(s.system, c.system) << c.ua;
}

INSTANTIATE_TEST_SUITE_P(
    Browsers, UserAgentCases,
    ::testing::Values(
        UaCase{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0",
               "Firefox 128", "Windows"},
        UaCase{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/126.0.0.0 Safari/537.36",
               "Chrome 126", "Windows"},
        UaCase{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68",
               "Edge 126", "Windows"},
        UaCase{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like "
               "Gecko) Version/17.2 Safari/605.1.15",
               "Safari 17", "macOS"},
        UaCase{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/125.0.0.0 Safari/537.36 OPR/111.0.0.0",
               "Opera 111", "Linux"},
        UaCase{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/126.0.6478.71 Mobile Safari/537.36",
               "Chrome 126", "Android 14"},
        UaCase{"Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) "
               "SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
               "Samsung Internet 25", "Android 13"},
        UaCase{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
               "like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
               "Safari 17", "iOS 17"},
        UaCase{"Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
               "Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
               "Chrome 126", "iPadOS 16"},
        UaCase{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
               "like Gecko) FxiOS/127.0 Mobile/15E148 Safari/605.1.15",
               "Firefox 127", "iOS 17"},
        UaCase{"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/126.0.0.0 Safari/537.36",
               "Chrome 126", "ChromeOS"},
        UaCase{"curl/8.5.0", "curl 8", ""},
        UaCase{"", "", ""},
        UaCase{"SomethingElse/1.0", "", ""}));

TEST(UserAgent, OnlyFixedNamesAndDigitsComeOut) {
    // a header that tries to put a link, markup or a new line into the email
    UserAgentSummary s = summarize_user_agent(
        "Firefox/<a href=\"https://evil.example/\">click</a>\r\nBcc: x@example.com (Windows)");
    EXPECT_EQ(s.browser, "Firefox");
    EXPECT_EQ(s.system, "Windows");
    s = summarize_user_agent("Chrome/99999999 Android 1234567");
    EXPECT_EQ(s.browser, "Chrome");  // no browser has a five-digit major version
    EXPECT_EQ(s.system, "Android");
    s = summarize_user_agent("Firefox/0128.0");
    EXPECT_EQ(s.browser, "Firefox 128");
    s = summarize_user_agent("Firefox/0");
    EXPECT_EQ(s.browser, "Firefox 0");
}

TEST(UserAgent, LooksOnlyAtTheStartOfALongHeader) {
    std::string ua(kUserAgentScanLimit, 'x');
    ua += " Firefox/128.0 (Windows)";
    UserAgentSummary s = summarize_user_agent(ua);
    EXPECT_EQ(s.browser, "");
    EXPECT_EQ(s.system, "");
    // a token cut by the limit keeps its name but not a version beyond it
    std::string cut(kUserAgentScanLimit - 8, 'x');
    cut += "Firefox/128.0";
    EXPECT_EQ(summarize_user_agent(cut).browser, "Firefox");
}

}  // namespace
