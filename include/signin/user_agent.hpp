// A short, safe description of the browser a sign-in came from ("Firefox 128", "Android 14"), for
// the new-sign-in notice. A User-Agent is text anyone can send, so the summary is built only from
// fixed names and a few digits taken from it, never from the header's own words: what goes into
// an email cannot carry markup, line breaks or a link that the sender chose.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace signin {

struct UserAgentSummary {
    std::string browser;  // "Firefox 128", "Edge 126", "Safari 17"; empty when not recognized
    std::string system;   // "Windows", "macOS", "Android 14", "iOS 17"; empty when not recognized
};

// Only the first this many bytes of a header are looked at, so the work per request is bounded
// whatever a client sends.
inline constexpr std::size_t kUserAgentScanLimit = 1024;

UserAgentSummary summarize_user_agent(std::string_view user_agent);

}  // namespace signin
