// libFuzzer: what the SMTP sender writes from text it does not control (an email's subject and
// bodies carry a visitor's address and a custom template's text) and the parsers of its settings
// (signin_smtp's URL and the mailboxes, checked at nginx -t). The relay's replies are parsed by
// libcurl. Checks: quoted-printable decodes back to the text with every line within 76
// characters and CRLF line ends; a header value stays within SMTP's 998 and never breaks a line
// but by folding; a parsed URL or mailbox parses again to the same. (The relay's reply lines, as
// libcurl hands them over, are fuzz_smtp_reply's.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "signin/smtp.hpp"

namespace {

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// RFC 2045 quoted-printable, strictly: anything the encoder should not write traps.
std::string qp_decode(std::string_view s) {
    std::string out;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '\r') {
            if (i + 1 >= s.size() || s[i + 1] != '\n') __builtin_trap();
            if (i - line_start > 76) __builtin_trap();
            out += "\n";
            ++i;
            line_start = i + 1;
        } else if (c == '\n') {
            __builtin_trap();  // a bare LF
        } else if (c == '=') {
            if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {
                if (i + 1 - line_start > 76) __builtin_trap();
                i += 2;
                line_start = i + 1;
                continue;
            }
            if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0) __builtin_trap();
            out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            auto u = static_cast<unsigned char>(c);
            if (u < 32 && c != '\t') __builtin_trap();
            if (u > 126) __builtin_trap();
            out += c;
        }
    }
    if (s.size() - line_start > 76) __builtin_trap();
    return out;
}

// The text as the encoder reads it: CRLF and LF both end a line.
std::string lf_lines(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
        out += s[i];
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char *>(data), size);

    // a lone CR inside a line is data to quoted-printable (=0D), so only whole CRLF pairs fold
    if (lf_lines(text).find('\r') == std::string::npos) {
        if (qp_decode(signin::smtp::quoted_printable(text)) != lf_lines(text)) __builtin_trap();
    } else {
        (void)qp_decode(signin::smtp::quoted_printable(text));
    }

    // a header value: one line of text (the subject of an email is one line)
    std::string_view line = text.substr(0, text.find_first_of("\r\n"));
    std::string h = signin::smtp::encode_header_text(line, 9);
    std::size_t start = 0;
    for (;;) {
        std::size_t end = h.find("\r\n", start);
        std::string_view l = std::string_view(h).substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (l.size() + (start == 0 ? 9 : 0) > 998) __builtin_trap();
        if (l.find_first_of("\r\n") != std::string_view::npos) __builtin_trap();
        if (end == std::string::npos) break;
        if (end + 2 >= h.size() || h[end + 2] != ' ') __builtin_trap();  // folded, never a new header
        start = end + 2;
    }

    if (auto r = signin::smtp::parse_relay(text)) {
        auto again = signin::smtp::parse_relay(r->url());
        if (!again || again->url() != r->url() || again->loopback != r->loopback) __builtin_trap();
    }
    if (auto m = signin::smtp::parse_mailbox(text, "signin_smtp_from")) {
        if (m->address.find_first_of("\r\n<>\" ") != std::string::npos) __builtin_trap();
        if (m->domain().empty()) __builtin_trap();
    }
    return 0;
}
