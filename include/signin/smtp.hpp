// Email over SMTP: the relay's settings as configured (checked where nginx -t and signin-admin can
// use them), the messages as a spam filter expects them, and a blocking sender for a thread of
// nginx's thread pool, which sends a batch of messages over one connection with libcurl (SMTP and
// TLS by a well-kept library, not by hand) and says what became of each. Valid C++17: the glue
// includes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/secret.hpp"
#include "signin/types.hpp"

namespace signin {
struct Email;
}

namespace signin::smtp {

// ---------------------------------------------------------------- settings

// Where the relay is: `smtp://HOST[:PORT]` (port 587 unless given; STARTTLS required, or only used
// when offered if HOST is loopback) or `smtps://HOST[:PORT]` (port 465, TLS from the first byte).
// HOST: a DNS name, a dotted IPv4 address or a bracketed IPv6 address; nothing after the port.
struct Relay {
    bool implicit_tls = false;  // smtps://
    std::string host;           // lower case, brackets kept around an IPv6 address
    std::uint16_t port = 587;
    bool loopback = false;      // localhost, 127.x.y.z or [::1]: plain SMTP is allowed there

    // The URL as libcurl is given it, with the port always written: "smtp://relay.example:587".
    std::string url() const;
};
Result<Relay> parse_relay(std::string_view url);

// An RFC 5322 mailbox: `addr@domain`, `<addr@domain>`, `Name <addr@domain>` or `"Name" <...>`.
// The address is a plain ASCII dot-atom (an internationalized domain in its xn-- form); the name
// may be any UTF-8 text without control characters (it is encoded in the header as needed).
struct Mailbox {
    std::string name;     // empty when none
    std::string address;  // as written (case kept)

    std::string_view domain() const;  // after the '@'
};
// `what` names the setting in the messages, e.g. "signin_smtp_from".
Result<Mailbox> parse_mailbox(std::string_view text, std::string_view what);

// The relay's account, from a file of one line `user:password` (a trailing line end allowed; the
// password may hold ':'). Its contents never appear in a message.
struct Login {
    std::string user;
    Secret password;
};
Result<Login> read_auth_file(const std::string &path);

// The directives as written (empty: not set).
struct Config {
    std::string url;                  // signin_smtp
    std::string from;                 // signin_smtp_from (required)
    std::string reply_to;             // signin_smtp_reply_to
    std::string auth_file;            // signin_smtp_auth_file
    std::string trusted_certificate;  // signin_smtp_trusted_certificate (default: the system's CAs)
    Millis timeout = 30 * 1000;       // signin_smtp_timeout
};

struct Settings {
    Relay relay;
    Mailbox from;
    std::optional<Mailbox> reply_to;
    std::optional<Login> login;  // AUTH PLAIN or LOGIN; libcurl offers it only after TLS is up,
                                 // or on loopback (see send: STARTTLS is required elsewhere)
    std::string ca_file;         // empty: the system's CAs
    // The CA file's contents, read by check() (where nginx reads its configuration, as root):
    // given to libcurl instead of the path, so the worker user needs no access to the file.
    // Empty: libcurl reads ca_file itself.
    std::string ca_pem;
    // How long the relay may keep us waiting: to connect, and with no byte moving in either
    // direction; one message's whole exchange (connection, TLS, login included) gets three times that.
    Millis timeout = 30 * 1000;
    // libcurl's CURLOPT_CONNECT_TO entries ("HOST:PORT:CONNECT-HOST:CONNECT-PORT"): the relay's name
    // stays HOST for the rules above and for the certificate, the connection goes elsewhere. For
    // tests, which can only listen on loopback; no directive sets it.
    std::vector<std::string> connect_to;
};

// Every problem of a configuration, one sentence each (none: `settings` is usable). Reads the
// auth file and the CA file.
struct Checked {
    Settings settings;
    std::vector<std::string> problems;
    bool ok() const { return problems.empty(); }
};
Checked check(const Config &config);

// ---------------------------------------------------------------- messages

// One email to one address.
struct Message {
    std::string to;  // the recipient's address (no display name)
    std::string subject, text, html;
};
Message message(const Email &email, std::string to);

// The message as it goes into DATA: RFC 5322 headers (Date, From, Reply-To when set, To, Subject
// encoded per RFC 2047 unless plain ASCII, Message-ID under the From domain, MIME-Version,
// Auto-Submitted: auto-generated), then multipart/alternative with the text and the HTML as UTF-8
// in quoted-printable; CRLF line ends, no line longer than 76 characters but a folded header's
// (998 at most). `now`: the Date (ms since the epoch, written in UTC). Dot-stuffing is libcurl's.
std::string compose(const Settings &settings, const Message &m, Millis now);

// RFC 2047 encoded-words (UTF-8, base64) for an unstructured header value or a display name;
// plain ASCII text that cannot be mistaken for an encoded word is returned as it is. Lines after
// the first are folded (CRLF SP) so that none exceeds 76 characters with `used` characters of
// header before the value on the first line.
std::string encode_header_text(std::string_view text, std::size_t used);
// Quoted-printable (RFC 2045) of UTF-8 text whose lines end in LF or CRLF: CRLF line ends, soft
// breaks before 76 characters. A '.' opening a line is left as it is: libcurl dot-stuffs DATA.
std::string quoted_printable(std::string_view text);

// ---------------------------------------------------------------- sending

enum class Outcome : std::uint8_t {
    Sent,       // the relay answered 250 after the message's data
    Retry,      // a 4xx reply, no answer in time, no connection, a dropped connection, a TLS or
                // login failure (the relay's or its configuration's, not the message's)
    Permanent,  // a 5xx reply to MAIL, RCPT or the data, or an address the relay cannot take
};
std::string_view outcome_name(Outcome o);  // "sent", "retry", "permanent"

struct SendResult {
    Outcome outcome = Outcome::Retry;
    int reply = 0;  // the relay's last SMTP reply code, 0 when there was none (no connection)
    // One line a person can read, naming the step and quoting the relay's reply (printable ASCII,
    // at most a few hundred bytes); never a password. Empty when sent.
    std::string error;
    // The failure is the relay's or the connection's, not this message's: send_batch did not try
    // the messages after it (each got a copy of this result).
    bool relay_failure = false;
};

// libcurl's global state: call once per process before any thread sends (curl_global_init is
// not thread-safe in every build). Fails only when libcurl cannot start or lacks SMTP or TLS.
Status global_init();

// One connection to the relay (opened at the first send, kept while the relay keeps it): for
// several messages in a row, and batch after batch. Blocking; never logs; safe to use from any one
// thread at a time (it may pass from thread to thread between sends). Certificates are always
// verified (the CA file of the settings, else the system's). A kept connection that the relay
// closed meanwhile is found out: before a send when the close has arrived, else by the send
// failing with no reply at all, which is then made once more over a new connection.
class Session {
public:
    // `cancel`: when it becomes true, a send under way stops (Retry) within about a second, e.g.
    // when the worker shuts down. The session keeps its own copy of the settings.
    explicit Session(const Settings &settings, const std::atomic<bool> *cancel = nullptr);
    ~Session();  // QUIT and close
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    SendResult send(const Message &m, Millis now);
    // Connections opened so far (1 when every message went over the same one).
    unsigned connections() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

// The whole batch over one connection, in order, one result per message. After a relay failure
// (no connection, TLS, login, timeout, or a 421) the rest are not tried and get that result too:
// a dead relay costs one timeout per batch, not one per message.
std::vector<SendResult> send_batch(const Settings &settings, const std::vector<Message> &messages, Millis now,
                                   const std::atomic<bool> *cancel = nullptr);
// The same over a session the caller keeps: its connection, when still open, carries the batch
// (no new connection, EHLO, STARTTLS or login), and stays open afterwards for the next one.
std::vector<SendResult> send_batch(Session &session, const std::vector<Message> &messages, Millis now);

}  // namespace signin::smtp
