// The mail relay's replies as the SMTP sender reads them (smtp_send.cpp): libcurl runs the
// protocol and hands every reply line it reads to a callback, and this keeps what the sender
// needs of them: the last complete reply's code and text (quoted in a failure's reason), whether
// DATA was accepted, and what EHLO offered. The relay is not trusted: any bytes are read, and what
// is kept stays bounded however many lines come. Private to the core; the unit tests and
// fuzz/fuzz_smtp_reply drive it directly.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace signin::smtp {

// The relay's text as a log line and signin-admin may show it: printable ASCII, every run of
// other bytes one space, none at the end, at most `max` bytes and then "...".
std::string printable(std::string_view s, std::size_t max = 200);

class ReplyReader {
public:
    // What is kept of one reply's text, at most (its lines joined by a space).
    static constexpr std::size_t kMaxText = 1024;

    // A new transfer: the last reply is forgotten. What EHLO offered is kept: it holds for the
    // connection, and libcurl reuses connections across transfers.
    void begin();
    // One line as libcurl gives it: "250-SIZE 1000\r\n", "250 OK\r\n" (CRLF or LF, or none). A
    // line that does not start with three digits is ignored.
    void line(std::string_view raw);

    // The last complete reply's code (0: none yet in this transfer).
    int code() const { return code_; }
    // Its text: each line's text after the code, joined by a space (at most kMaxText).
    const std::string &text() const { return text_; }
    // A multi-line reply is being read (its last line has not come).
    bool in_reply() const { return open_; }
    // A 354 came in this transfer: whatever fails after it is about the message's data.
    bool data_accepted() const { return data_accepted_; }
    // The EHLO reply on the current connection has been read, and whether it listed SMTPUTF8.
    bool capabilities_known() const { return caps_known_; }
    bool smtputf8() const { return smtputf8_; }

private:
    std::string text_;
    int code_ = 0;
    bool open_ = false;
    bool data_accepted_ = false;
    bool after_greeting_ = false;  // a 220 was read: the next reply is EHLO's
    bool caps_known_ = false;
    bool smtputf8_ = false;
};

}  // namespace signin::smtp
