// libFuzzer: the mail relay's reply lines as the SMTP sender keeps them (src/core/smtp_reply.hpp).
// libcurl reads the protocol, but every line the relay sends reaches this reader, and its text ends
// up in a log line and in signin-admin outbox. The input is split into lines at LF; each is fed
// as libcurl would (with its line end). Checks, against a small model of the replies: the code
// is the last complete reply's, and a multi-line reply stays open until its last line; 354 and
// the EHLO capabilities are seen where they came; the text kept stays within its bound, and what
// printable() makes of it is printable ASCII within its own.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/smtp_reply.hpp"

namespace {

bool digits3(std::string_view l) {
    return l.size() >= 3 && l[0] >= '0' && l[0] <= '9' && l[1] >= '0' && l[1] <= '9' && l[2] >= '0' && l[2] <= '9';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char *>(data), size);
    signin::smtp::ReplyReader r;
    r.begin();
    int code = 0;
    bool open = false, data_accepted = false;
    std::size_t start = 0;
    while (start < in.size()) {
        std::size_t end = in.find('\n', start);
        end = end == std::string_view::npos ? in.size() : end + 1;
        const std::string_view raw = in.substr(start, end - start);
        start = end;
        r.line(raw);

        std::string_view l = raw;
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.remove_suffix(1);
        if (digits3(l)) {
            const int c = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
            if (c != 221) {
                open = l.size() > 3 && l[3] == '-';
                if (!open) {
                    code = c;
                    if (c == 354) data_accepted = true;
                }
            }
        }
        if (r.code() != code || r.in_reply() != open || r.data_accepted() != data_accepted) __builtin_trap();
        if (r.text().size() > signin::smtp::ReplyReader::kMaxText) __builtin_trap();
        if (r.smtputf8() && !r.capabilities_known() && !r.in_reply()) {
            // SMTPUTF8 is only ever set while an EHLO reply is read, which then completes it
            __builtin_trap();
        }
    }
    for (std::size_t max : {std::size_t{0}, std::size_t{16}, std::size_t{200}}) {
        const std::string p = signin::smtp::printable(r.text(), max);
        if (p.size() > max + 3) __builtin_trap();
        for (char c : p) {
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) __builtin_trap();
        }
        if (!p.empty() && p.back() == ' ') __builtin_trap();
    }
    return 0;
}
