// libFuzzer: the User-Agent summary of the new-sign-in notice (any client sends any header). What
// comes out goes into an email, so it must be short and made of letters, digits and spaces only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "signin/user_agent.hpp"

namespace {

void check(const std::string &s) {
    if (s.size() > 32) __builtin_trap();
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ';
        if (!ok) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char *>(data), size);
    signin::UserAgentSummary s = signin::summarize_user_agent(text);
    check(s.browser);
    check(s.system);
    return 0;
}
