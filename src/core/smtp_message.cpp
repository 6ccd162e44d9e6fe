// The SMTP messages: RFC 5322 headers, RFC 2047 encoded words, MIME multipart/alternative in
// quoted-printable.
#include <sodium.h>

#include <ctime>
#include <string>

#include "encoding.hpp"
#include "signin/emails.hpp"
#include "signin/smtp.hpp"

namespace signin::smtp {
namespace {

// A line of a message stays within 76 characters (RFC 2045's limit for quoted-printable, and what
// mail clients expect of headers); SMTP's own limit is 998.
constexpr std::size_t kLine = 76;
constexpr char kHex[] = "0123456789ABCDEF";

bool printable_ascii(std::string_view s) {
    for (unsigned char c : s) {
        if (c < 0x20 || c > 0x7e) return false;
    }
    return true;
}

// The length of the UTF-8 sequence that starts with c (1 for a stray byte: it is kept whole).
std::size_t utf8_length(unsigned char c) {
    if (c >= 0xf0 && c < 0xf8) return 4;
    if (c >= 0xe0) return c < 0xf0 ? 3 : 1;
    if (c >= 0xc0) return 2;
    return 1;
}

std::string base64(std::string_view s) {
    std::string out(sodium_base64_encoded_len(s.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char *>(s.data()), s.size(),
                      sodium_base64_VARIANT_ORIGINAL);
    out.resize(out.size() - 1);  // the terminating NUL
    return out;
}

// Encoded words, each at most 76 characters on its line: the first after `used` characters.
std::string encoded_words(std::string_view text, std::size_t used) {
    constexpr std::string_view kOpen = "=?UTF-8?B?", kClose = "?=";
    std::string out;
    std::size_t i = 0;
    std::size_t room = kLine > used + kOpen.size() + kClose.size() ? kLine - used - kOpen.size() - kClose.size() : 0;
    while (i < text.size()) {
        std::size_t max_bytes = room / 4 * 3;
        if (max_bytes < 4) max_bytes = 4;  // at least one character per word
        std::size_t n = 0;
        while (i + n < text.size()) {
            std::size_t len = utf8_length(static_cast<unsigned char>(text[i + n]));
            if (i + n + len > text.size()) len = text.size() - i - n;
            if (n + len > max_bytes) break;
            n += len;
        }
        if (!out.empty()) out += "\r\n ";
        out.append(kOpen).append(base64(text.substr(i, n))).append(kClose);
        i += n;
        room = kLine - 1 - kOpen.size() - kClose.size();  // the lines after start with one space
    }
    return out;
}

// "Thu, 01 Jan 2025 00:00:00 +0000"
std::string rfc5322_date(Millis now) {
    static constexpr const char *kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char *kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::time_t t = static_cast<std::time_t>(now / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday], tm.tm_mday,
                  kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}

// RFC 5322 atext and spaces: a display name that needs no quotes
bool plain_phrase(std::string_view s) {
    static constexpr std::string_view kAtext = "!#$%&'*+-/=?^_`{|}~ ";
    for (char c : s) {
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && kAtext.find(c) == std::string_view::npos) return false;
    }
    return s.find("=?") == std::string_view::npos;
}

// `Name <address>` (or the address alone) for a header whose name takes `used` characters.
std::string mailbox_header(const Mailbox &m, std::size_t used) {
    if (m.name.empty()) return m.address;
    std::string name;
    if (plain_phrase(m.name)) {
        name = m.name;
    } else if (printable_ascii(m.name) && m.name.find("=?") == std::string::npos) {
        name = "\"";
        for (char c : m.name) {
            if (c == '"' || c == '\\') name += '\\';
            name += c;
        }
        name += '"';
    } else {
        name = encoded_words(m.name, used);
    }
    std::size_t last = name.rfind('\n');
    std::size_t column = last == std::string::npos ? used + name.size() : name.size() - last - 1;
    // the address goes on a line of its own when it would not fit after the name
    return name + (column + 3 + m.address.size() > kLine ? "\r\n <" : " <") + m.address + ">";
}

void header(std::string &out, std::string_view name, std::string_view value) {
    out.append(name).append(": ").append(value).append("\r\n");
}

void append_part(std::string &out, std::string_view boundary, std::string_view type, std::string_view body) {
    out.append("--").append(boundary).append("\r\n");
    out.append("Content-Type: ").append(type).append("; charset=UTF-8\r\n");
    out.append("Content-Transfer-Encoding: quoted-printable\r\n\r\n");
    out.append(quoted_printable(body)).append("\r\n");
}

// Fresh random text for a Message-ID or a MIME boundary (at most 32 bytes of randomness).
std::string random_hex(std::size_t bytes) {
    unsigned char raw[32];
    bytes = bytes < sizeof raw ? bytes : sizeof raw;
    randombytes_buf(raw, bytes);
    return enc::hex(raw, bytes);
}

}  // namespace

std::string encode_header_text(std::string_view text, std::size_t used) {
    bool plain = printable_ascii(text) && text.find("=?") == std::string_view::npos;
    // a word too long to fold is encoded: encoded words can be cut anywhere
    std::size_t word = 0;
    for (char c : text) {
        word = c == ' ' ? 0 : word + 1;
        if (word > kLine - 2) plain = false;
    }
    if (!plain) return encoded_words(text, used);
    // fold at spaces: CRLF goes before a space, which stays part of the value
    std::string out;
    std::size_t column = used;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t next = text.find(' ', i + 1);
        if (next == std::string_view::npos) next = text.size();
        std::string_view piece = text.substr(i, next - i);  // a word with the space before it
        if (column + piece.size() > kLine && i > 0) {
            out += "\r\n";
            column = 0;
        }
        out.append(piece);
        column += piece.size();
        i = next;
    }
    return out;
}

std::string quoted_printable(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        const bool has_end = end != std::string_view::npos;
        std::string_view line = text.substr(start, has_end ? end - start : std::string_view::npos);
        if (has_end && !line.empty() && line.back() == '\r') line.remove_suffix(1);
        std::size_t column = 0;
        for (std::size_t i = 0; i < line.size(); ++i) {
            const auto c = static_cast<unsigned char>(line[i]);
            char enc[4] = {static_cast<char>(c), 0, 0, 0};
            std::size_t n = 1;
            const bool last = i + 1 == line.size();
            // trailing white space is encoded (a relay may strip it), so is '=', every control and
            // non-ASCII byte, and the F of a line's "From " (mbox writers turn it into ">From ")
            const bool literal = (c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !last);
            const bool from = i == 0 && line.substr(0, 5) == "From ";
            if (!literal || from) {
                enc[0] = '=';
                enc[1] = kHex[c >> 4];
                enc[2] = kHex[c & 15];
                n = 3;
            }
            // a soft break ("=" at the end of a line) keeps every line within 76 characters
            if (column + n > kLine - 1) {
                out += "=\r\n";
                column = 0;
            }
            out.append(enc, n);
            column += n;
        }
        if (has_end) out += "\r\n";
        start = has_end ? end + 1 : text.size();
    }
    return out;
}

Message message(const Email &email, std::string to) {
    return Message{std::move(to), email.subject, email.text, email.html};
}

std::string compose(const Settings &settings, const Message &m, Millis now) {
    std::string out;
    out.reserve(m.text.size() + m.html.size() + m.html.size() / 8 + 1024);
    header(out, "Date", rfc5322_date(now));
    header(out, "From", mailbox_header(settings.from, 6));
    if (settings.reply_to) header(out, "Reply-To", mailbox_header(*settings.reply_to, 10));
    header(out, "To", m.to);
    header(out, "Subject", encode_header_text(m.subject, 9));
    header(out, "Message-ID", "<" + random_hex(16) + "@" + std::string(settings.from.domain()) + ">");
    header(out, "MIME-Version", "1.0");
    // RFC 3834: no vacation notice or other automatic answer is due to it
    header(out, "Auto-Submitted", "auto-generated");
    if (m.html.empty()) {
        header(out, "Content-Type", "text/plain; charset=UTF-8");
        header(out, "Content-Transfer-Encoding", "quoted-printable");
        out += "\r\n";
        out += quoted_printable(m.text);
        return out;
    }
    // "=_" never occurs in quoted-printable ('=' is followed by hex digits or a line end), so the
    // boundary cannot appear in a part
    const std::string boundary = "=_signin_" + random_hex(12);
    header(out, "Content-Type", "multipart/alternative;\r\n boundary=\"" + boundary + "\"");
    out += "\r\n";
    // the text first: the last part is the one a client prefers to show
    append_part(out, boundary, "text/plain", m.text);
    append_part(out, boundary, "text/html", m.html);
    out.append("--").append(boundary).append("--\r\n");
    return out;
}

}  // namespace signin::smtp
