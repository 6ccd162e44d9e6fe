// Sending over SMTP with libcurl (Debian's libcurl4-openssl-dev: SMTP, STARTTLS, SASL and
// certificate checks by a library that is kept up to date, not by hand).
//
// What this file relies on libcurl for (7.88, Debian 12's; see its lib/smtp.c):
// - dot-stuffing: every line of the upload that starts with '.' is sent with one more '.', and the
//   data is ended with CRLF.CRLF (CURLOPT_CRLF stays off: the message has CRLF line ends already);
// - SMTPUTF8: when the server lists SMTPUTF8 after EHLO and an address is not ASCII, libcurl adds
//   SMTPUTF8 to MAIL FROM by itself; when the server does not, libcurl would send the address
//   anyway, so a non-ASCII recipient is checked here against the server's EHLO reply first;
// - connection reuse: an easy handle keeps its connection after a transfer that succeeded, and the
//   next transfer to the same URL reuses it (no second EHLO, STARTTLS or AUTH) once libcurl has
//   checked that the relay has not closed it; after a failed transfer libcurl closes it and the
//   next one connects again;
// - every server reply line reaches CURLOPT_HEADERFUNCTION (the EHLO capabilities, the text of a
//   refusal); the commands sent, AUTH's included, are never seen here (no CURLOPT_VERBOSE);
// - CURLUSESSL_ALL: no command after EHLO goes out before STARTTLS succeeded, so AUTH never goes in
//   clear text to a relay that is not on loopback.
// libcurl does not pipeline SMTP commands (RFC 2920): each command waits for its reply.
#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "signin/smtp.hpp"
#include "smtp_reply.hpp"
#include "text.hpp"

namespace signin::smtp {
namespace {

// An address as the envelope takes it: local@domain, no space, bracket or control character.
bool envelope_address(std::string_view a) {
    if (a.empty() || a.size() > 254 || a.find('@') == std::string_view::npos) return false;
    return std::none_of(a.begin(), a.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u == 0x7f || c == '<' || c == '>';
    });
}

}  // namespace

std::string_view outcome_name(Outcome o) {
    switch (o) {
    case Outcome::Sent: return "sent";
    case Outcome::Retry: return "retry";
    case Outcome::Permanent: return "permanent";
    }
    return "retry";
}

Status global_init() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return Status(Code::Internal, "libcurl could not be initialised");
    }
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    bool smtp = false, smtps = false;
    for (const char *const *p = v->protocols; p != nullptr && *p != nullptr; ++p) {
        smtp = smtp || std::strcmp(*p, "smtp") == 0;
        smtps = smtps || std::strcmp(*p, "smtps") == 0;
    }
    if (!smtp || !smtps || (v->features & CURL_VERSION_SSL) == 0) {
        return Status(Code::Internal, std::string("libcurl ") + v->version + " lacks SMTP or TLS");
    }
    return ok_status();
}

struct Session::State {
    const Settings settings;  // a copy: a session may outlive the caller's
    const std::atomic<bool> *cancel;
    CURL *h = nullptr;
    curl_slist *connect_to = nullptr;
    char errbuf[CURL_ERROR_SIZE] = {};
    std::string login_options = "AUTH=PLAIN;AUTH=LOGIN";

    // the message being uploaded
    std::string data;
    std::size_t sent = 0;

    // what the server said during the current transfer, and offered on the current connection
    ReplyReader replies;

    unsigned connections = 0;
    bool ready = false;  // the handle could be set up

    State(const Settings &s, const std::atomic<bool> *c) : settings(s), cancel(c) {}

    static std::size_t header_cb(char *p, std::size_t size, std::size_t n, void *self) {
        static_cast<State *>(self)->replies.line(std::string_view(p, size * n));
        return size * n;
    }
    static std::size_t discard_cb(char *, std::size_t size, std::size_t n, void *) { return size * n; }
    static std::size_t read_cb(char *out, std::size_t size, std::size_t n, void *self) {
        auto *s = static_cast<State *>(self);
        const std::size_t len = std::min(size * n, s->data.size() - s->sent);
        std::memcpy(out, s->data.data() + s->sent, len);
        s->sent += len;
        return len;
    }
    static int progress_cb(void *self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        auto *s = static_cast<State *>(self);
        return s->cancel != nullptr && s->cancel->load(std::memory_order_relaxed) ? 1 : 0;
    }

    bool setup() {
        h = curl_easy_init();
        if (h == nullptr) return false;
        const Relay &r = settings.relay;
        const long timeout_ms = static_cast<long>(settings.timeout);
        bool ok = true;
        auto set = [&](CURLoption o, auto v) { ok = ok && curl_easy_setopt(h, o, v) == CURLE_OK; };
        set(CURLOPT_URL, r.url().c_str());
        set(CURLOPT_PROTOCOLS_STR, "smtp,smtps");
        // never a signal: this runs in a thread of nginx's pool (DNS goes through libcurl's
        // resolver thread, so its timeout still holds)
        set(CURLOPT_NOSIGNAL, 1L);
        set(CURLOPT_ERRORBUFFER, errbuf);
        // TLS: required, except on loopback where it is used when the relay offers it; whenever
        // it is used, the certificate must verify and name the host
        set(CURLOPT_USE_SSL, r.loopback && !r.implicit_tls ? static_cast<long>(CURLUSESSL_TRY)
                                                           : static_cast<long>(CURLUSESSL_ALL));
        set(CURLOPT_SSL_VERIFYPEER, 1L);
        set(CURLOPT_SSL_VERIFYHOST, 2L);
        set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
        if (!settings.ca_pem.empty()) {
            // the file's contents as read with the configuration, in place of the system's CAs
            // (the bundle and the directory both unset: the blob is then all OpenSSL trusts)
            curl_blob blob{const_cast<char *>(settings.ca_pem.data()), settings.ca_pem.size(), CURL_BLOB_COPY};
            set(CURLOPT_CAINFO_BLOB, &blob);
            set(CURLOPT_CAINFO, static_cast<const char *>(nullptr));
            set(CURLOPT_CAPATH, static_cast<const char *>(nullptr));
        } else if (!settings.ca_file.empty()) {
            // the file replaces the system's CAs rather than adding to them
            set(CURLOPT_CAINFO, settings.ca_file.c_str());
            set(CURLOPT_CAPATH, static_cast<const char *>(nullptr));
        }
        // the setting bounds each wait: the connection, and any stretch with no byte moving; one
        // message's whole exchange (connection, TLS and login included) gets three times that
        set(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        set(CURLOPT_LOW_SPEED_LIMIT, 1L);
        set(CURLOPT_LOW_SPEED_TIME, std::max(1L, timeout_ms / 1000));
        set(CURLOPT_TIMEOUT_MS, 3 * timeout_ms);
        if (settings.login) {
            set(CURLOPT_USERNAME, settings.login->user.c_str());
            // reveal() views the Secret's own string, so it ends in a NUL; libcurl keeps a copy
            set(CURLOPT_PASSWORD, settings.login->password.reveal().data());
            set(CURLOPT_LOGIN_OPTIONS, login_options.c_str());
            set(CURLOPT_SASL_IR, 1L);  // AUTH PLAIN with its response: one round trip less
        }
        for (const std::string &c : settings.connect_to) connect_to = curl_slist_append(connect_to, c.c_str());
        if (connect_to != nullptr) set(CURLOPT_CONNECT_TO, connect_to);
        set(CURLOPT_MAIL_FROM, ("<" + settings.from.address + ">").c_str());
        set(CURLOPT_HEADERFUNCTION, &State::header_cb);
        set(CURLOPT_HEADERDATA, this);
        set(CURLOPT_WRITEFUNCTION, &State::discard_cb);
        set(CURLOPT_READFUNCTION, &State::read_cb);
        set(CURLOPT_READDATA, this);
        set(CURLOPT_XFERINFOFUNCTION, &State::progress_cb);
        set(CURLOPT_XFERINFODATA, this);
        set(CURLOPT_NOPROGRESS, 0L);
        return ok;
    }

    void begin() {
        replies.begin();
        errbuf[0] = '\0';
    }

    // One transfer; whether it opened a connection or went over the one kept from before.
    CURLcode perform_once(bool &reused) {
        CURLcode rc = curl_easy_perform(h);
        long n = 0;
        reused = curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK && n == 0;
        if (n > 0) connections += static_cast<unsigned>(n);
        return rc;
    }

    CURLcode perform() {
        bool reused = false;
        CURLcode rc = perform_once(reused);
        // A kept connection that the relay closed (its idle timeout) just as this transfer began:
        // libcurl checks a connection before reusing it, but a close on its way is not seen yet.
        // Not a word came back on it, so nothing of this message was taken: once more, on a new
        // connection (libcurl does not reuse one that failed).
        const bool lost = rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR;
        if (lost && reused && replies.code() == 0 && !replies.in_reply() && !replies.data_accepted()) {
            begin();
            sent = 0;
            rc = perform_once(reused);
        }
        return rc;
    }

    // A NOOP on the connection (opening it when needed), so that its EHLO reply is known.
    CURLcode probe() {
        begin();
        curl_easy_setopt(h, CURLOPT_UPLOAD, 0L);
        curl_easy_setopt(h, CURLOPT_MAIL_RCPT, static_cast<curl_slist *>(nullptr));
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "NOOP");
        CURLcode rc = perform();
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, static_cast<const char *>(nullptr));
        return rc;
    }

    std::string with_reply(std::string what) const {
        const int reply = replies.code();
        if (reply == 0) return what;
        what += ": " + std::to_string(reply);
        std::string t = printable(replies.text());
        if (!t.empty()) what += " " + t;
        return what;
    }

    std::string curl_text(CURLcode rc) const {
        std::string t = printable(errbuf[0] != '\0' ? std::string_view(errbuf) : curl_easy_strerror(rc));
        return t.empty() ? std::string(curl_easy_strerror(rc)) : t;
    }

    // The relay's error reply to a command of the message's own (MAIL, RCPT, DATA), into r: this
    // message's failure (permanent for a 5xx), unless the reply is about the relay itself.
    SendResult refused_message(SendResult r) const {
        const std::string step(errbuf, std::min<std::size_t>(4, std::strlen(errbuf)));
        const char *what = step == "MAIL" ? "the relay refused the sender"
                           : step == "RCPT" ? "the relay refused the recipient"
                                            : "the relay refused the message";
        r.error = with_reply(what);
        const int reply = replies.code();
        if (reply == 421) {
            r.error = with_reply("the relay is closing the connection");
        } else if (reply == 530) {
            // "authentication required": the relay's configuration, not this message
            r.error = with_reply("the relay wants a login (signin_smtp_auth_file)");
        } else {
            r.relay_failure = false;
            if (reply >= 500) r.outcome = Outcome::Permanent;
        }
        return r;
    }

    SendResult failure(CURLcode rc) const {
        SendResult r;
        const int reply = replies.code();
        r.reply = reply;
        r.outcome = Outcome::Retry;
        r.relay_failure = true;
        const Relay &relay = settings.relay;
        const std::string where = relay.host + ":" + std::to_string(relay.port);
        const bool message_step = (rc == CURLE_SEND_ERROR && reply >= 400) ||
                                  (rc == CURLE_WEIRD_SERVER_REPLY && replies.data_accepted() && reply >= 400);
        if (message_step) return refused_message(std::move(r));
        switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST:
            r.error = "cannot resolve the relay's name " + relay.host + " (" + curl_text(rc) + ")";
            break;
        case CURLE_COULDNT_CONNECT:
            r.error = "cannot connect to the relay " + where + " (" + curl_text(rc) + ")";
            break;
        case CURLE_OPERATION_TIMEDOUT:
            r.error = with_reply("the relay " + where + " did not answer in time (" + curl_text(rc) + ")");
            break;
        case CURLE_PEER_FAILED_VERIFICATION:
            r.error = "the relay's TLS certificate was not accepted (" + curl_text(rc) +
                      "): it must verify against " +
                      (settings.ca_file.empty() ? std::string("the system's CAs")
                                                : "signin_smtp_trusted_certificate " + settings.ca_file) +
                      " and name " + relay.host;
            break;
        case CURLE_SSL_CACERT_BADFILE:
            r.error = "signin_smtp_trusted_certificate " + settings.ca_file + " could not be loaded (" +
                      curl_text(rc) + ")";
            break;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_ENGINE_INITFAILED:
        case CURLE_SSL_SHUTDOWN_FAILED:
            r.error = "TLS with the relay " + where + " failed (" + curl_text(rc) + ")";
            break;
        case CURLE_USE_SSL_FAILED:
            r.error = with_reply("the relay " + where +
                                 " does not offer STARTTLS, which is required off loopback (smtps:// is for a "
                                 "relay that speaks TLS from the start)");
            break;
        case CURLE_LOGIN_DENIED:
            r.error = reply >= 400 && reply != 334 ? with_reply("the relay refused the login of signin_smtp_auth_file")
                                                   : "the relay offers neither AUTH PLAIN nor AUTH LOGIN";
            break;
        case CURLE_REMOTE_ACCESS_DENIED:
            r.error = with_reply("the relay refused EHLO");
            break;
        case CURLE_WEIRD_SERVER_REPLY:
            r.error = with_reply("unexpected reply from the relay");
            break;
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
            r.error = "the connection to the relay was lost (" + curl_text(rc) + ")";
            break;
        case CURLE_ABORTED_BY_CALLBACK:
            r.error = "the send was stopped (shutting down)";
            break;
        default:
            r.error = with_reply("sending failed (" + curl_text(rc) + ")");
            break;
        }
        return r;
    }

    SendResult send(const Message &m, Millis now) {
        SendResult r;
        if (!ready) {
            r.relay_failure = true;
            r.error = "libcurl could not be set up for SMTP";
            return r;
        }
        if (!envelope_address(m.to)) {
            r.outcome = Outcome::Permanent;
            r.error = "the recipient is not an address the envelope can carry";
            return r;
        }
        if (!text::is_ascii(m.to)) {
            // the server must say SMTPUTF8 on this very connection: ask when it is not known
            if (!replies.capabilities_known()) {
                CURLcode rc = probe();
                if (rc != CURLE_OK) return failure(rc);
            }
            if (!replies.smtputf8()) {
                r.outcome = Outcome::Permanent;
                r.error = "the recipient's address is not ASCII and the relay does not offer SMTPUTF8";
                return r;
            }
        }
        data = compose(settings, m, now);
        sent = 0;
        curl_slist *rcpt = curl_slist_append(nullptr, ("<" + m.to + ">").c_str());
        if (rcpt == nullptr) {
            r.error = "out of memory";
            return r;
        }
        curl_easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(data.size()));
        begin();
        CURLcode rc = perform();
        curl_easy_setopt(h, CURLOPT_MAIL_RCPT, static_cast<curl_slist *>(nullptr));
        curl_slist_free_all(rcpt);
        data.clear();
        if (rc != CURLE_OK) return failure(rc);
        r.outcome = Outcome::Sent;
        r.reply = replies.code();
        return r;
    }

    ~State() {
        if (h != nullptr) curl_easy_cleanup(h);
        curl_slist_free_all(connect_to);
    }
};

Session::Session(const Settings &settings, const std::atomic<bool> *cancel)
    : s_(std::make_unique<State>(settings, cancel)) {
    s_->ready = s_->setup();
}

Session::~Session() = default;

SendResult Session::send(const Message &m, Millis now) { return s_->send(m, now); }

unsigned Session::connections() const { return s_->connections; }

std::vector<SendResult> send_batch(const Settings &settings, const std::vector<Message> &messages, Millis now,
                                   const std::atomic<bool> *cancel) {
    Session session(settings, cancel);
    return send_batch(session, messages, now);
}

std::vector<SendResult> send_batch(Session &session, const std::vector<Message> &messages, Millis now) {
    std::vector<SendResult> out;
    out.reserve(messages.size());
    for (const Message &m : messages) {
        if (!out.empty() && out.back().relay_failure) {
            out.push_back(out.back());
            continue;
        }
        out.push_back(session.send(m, now));
    }
    return out;
}

}  // namespace signin::smtp
