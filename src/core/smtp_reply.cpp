// The relay's reply lines (smtp_reply.hpp).
#include "smtp_reply.hpp"

#include <algorithm>

#include "text.hpp"

namespace signin::smtp {

std::string printable(std::string_view s, std::size_t max) {
    std::string out;
    for (char c : s) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else if (!out.empty() && out.back() != ' ') {
            out += ' ';
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

void ReplyReader::begin() {
    text_.clear();
    open_ = false;
    code_ = 0;
    data_accepted_ = false;
}

void ReplyReader::line(std::string_view raw) {
    while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (raw.size() < 3 || !digit(raw[0]) || !digit(raw[1]) || !digit(raw[2])) return;
    const bool more = raw.size() > 3 && raw[3] == '-';
    const std::string_view body = raw.size() > 4 ? raw.substr(4) : std::string_view();
    const int code = (raw[0] - '0') * 100 + (raw[1] - '0') * 10 + (raw[2] - '0');
    // QUIT's answer: libcurl says QUIT when it closes a connection after a refusal, and the
    // refusal is what counts
    if (code == 221) return;
    if (!open_) text_.clear();
    // a relay that sends line after line keeps no more than this of them
    if (text_.size() < kMaxText) {
        if (!text_.empty()) text_ += ' ';
        text_.append(body.substr(0, kMaxText - std::min(text_.size(), kMaxText)));
    }
    if (code == 220) {
        // a greeting or STARTTLS's go-ahead: EHLO follows, and what it lists holds from then on
        after_greeting_ = true;
        caps_known_ = false;
        smtputf8_ = false;
    } else if (after_greeting_ && code / 100 == 2) {
        if (text::equals_lowercase(body.substr(0, body.find(' ')), "smtputf8")) smtputf8_ = true;
    }
    open_ = more;
    if (!more) {
        code_ = code;
        if (code == 354) data_accepted_ = true;
        if (after_greeting_ && code != 220) {
            after_greeting_ = false;
            caps_known_ = true;  // EHLO's reply (or HELO's, which lists nothing)
        }
    }
}

}  // namespace signin::smtp
