// The SMTP relay's settings: its URL, the sender's mailboxes, the login file, and their checks.
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "signin/engine.hpp"
#include "signin/json.hpp"
#include "signin/smtp.hpp"
#include "text.hpp"

namespace signin::smtp {
namespace {

Error invalid(std::string message) { return Error{Code::InvalidRequest, std::move(message)}; }

using text::has_control;
using text::is_ascii;
using text::trim;

// A file's contents, at most `max` bytes and one more (so the caller can tell it was longer).
// A file that holds a secret (`secret`): every buffer it passed through is wiped, on failure too.
Result<std::string> read_bounded(const std::string &path, const std::string &w, std::size_t max, bool secret) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return invalid(w + " cannot be read: " + std::strerror(errno));
    std::string content;
    char buf[8192];
    int error = 0;
    while (content.size() <= max) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        if (n <= 0) break;
        content.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (secret) sodium_memzero(buf, sizeof buf);
    if (error != 0) {
        if (secret) sodium_memzero(content.data(), content.size());
        return invalid(w + " cannot be read: " + std::strerror(error));
    }
    return content;
}

// The CA file's contents (PEM; libcurl parses them at the first connection).
Result<std::string> read_ca_file(const std::string &path) {
    constexpr std::size_t kMax = 16u << 20;  // the system's whole bundle is a few hundred KB
    const std::string w = "signin_smtp_trusted_certificate \"" + path + "\"";
    auto content = read_bounded(path, w, kMax, false);
    if (!content) return content;
    if (content->size() > kMax) return invalid(w + " is larger than 16 MB: not a file of CA certificates");
    if (content->empty()) return invalid(w + " is empty");
    return content;
}

}  // namespace

std::string Relay::url() const {
    return std::string(implicit_tls ? "smtps://" : "smtp://") + host + ":" + std::to_string(port);
}

Result<Relay> parse_relay(std::string_view url) {
    constexpr std::string_view kForm = "signin_smtp is smtp://HOST[:PORT] or smtps://HOST[:PORT]";
    const std::string t = text::lowered(url);
    Relay r;
    std::string_view rest;
    if (t.rfind("smtps://", 0) == 0) {
        r.implicit_tls = true;
        r.port = 465;
        rest = std::string_view(t).substr(8);
    } else if (t.rfind("smtp://", 0) == 0) {
        rest = std::string_view(t).substr(7);
    } else {
        return invalid(std::string(kForm) + ", not \"" + std::string(url.substr(0, 64)) + "\"");
    }
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.find('@') != std::string_view::npos) {
        // whatever precedes the '@' is not repeated here: it may be a password
        return invalid("signin_smtp's URL carries no user or password: put them in signin_smtp_auth_file");
    }
    if (rest.find_first_of("/?#") != std::string_view::npos) {
        return invalid(std::string(kForm) + ", with nothing after the port");
    }
    std::string_view host = rest;
    std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
        host = rest.substr(0, colon);
        std::string_view port = rest.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
            return invalid("signin_smtp: the port must be a number from 1 to 65535");
        }
        const unsigned long n = std::stoul(std::string(port));
        if (n < 1 || n > 65535) return invalid("signin_smtp: the port must be a number from 1 to 65535");
        r.port = static_cast<std::uint16_t>(n);
    }
    if (host.empty()) return invalid("signin_smtp needs a host: " + std::string(kForm));
    if (!valid_host(host)) {
        return invalid("signin_smtp: the host is a DNS name (letters, digits, '-' and '.'; an internationalized "
                       "name in its xn-- form), an IPv4 address or a bracketed IPv6 address");
    }
    r.host = std::string(host);
    r.loopback = is_loopback_host(r.host);
    return r;
}

std::string_view Mailbox::domain() const {
    std::string_view a(address);
    std::size_t at = a.rfind('@');
    return at == std::string_view::npos ? std::string_view() : a.substr(at + 1);
}

Result<Mailbox> parse_mailbox(std::string_view text, std::string_view what) {
    const std::string w(what);
    std::string_view s = trim(text);
    if (s.empty()) return invalid(w + " is empty: write an address, e.g. \"Acme <no-reply@acme.com>\"");
    if (has_control(s)) return invalid(w + " holds a control character (a line break?)");
    if (!json::valid_utf8(s)) return invalid(w + " is not valid UTF-8");
    Mailbox m;
    std::string_view addr = s;
    if (s.back() == '>') {
        std::size_t open = s.rfind('<');
        if (open == std::string_view::npos) return invalid(w + ": a '>' without its '<'");
        addr = s.substr(open + 1, s.size() - open - 2);
        std::string_view name = trim(s.substr(0, open));
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
            // a quoted string: \x stands for x
            std::string unquoted;
            for (std::size_t i = 1; i + 1 < name.size(); ++i) {
                char c = name[i];
                if (c == '\\' && i + 2 < name.size()) {
                    c = name[++i];
                } else if (c == '"' || c == '\\') {
                    return invalid(w + ": a '\"' or '\\' inside the quoted name must be escaped with '\\'");
                }
                unquoted.push_back(c);
            }
            m.name = std::move(unquoted);
        } else {
            if (name.find_first_of("\"<>") != std::string_view::npos) {
                return invalid(w + ": the name before <address> has a stray '\"', '<' or '>'; quote the whole name");
            }
            m.name = std::string(name);
        }
    } else if (s.find_first_of("<>\" ") != std::string_view::npos) {
        return invalid(w + " is an address, or Name <address>");
    }
    if (!is_ascii(addr)) {
        return invalid(w + ": the address must be ASCII (write an internationalized domain in its xn-- form)");
    }
    if (!normalize_email(addr)) {
        return invalid(w + ": \"" + std::string(addr.substr(0, 254)) + "\" is not an email address (local@domain.tld)");
    }
    m.address = std::string(addr);
    return m;
}

Result<Login> read_auth_file(const std::string &path) {
    constexpr std::size_t kMax = 4096;
    const std::string w = "signin_smtp_auth_file \"" + path + "\"";
    auto content = read_bounded(path, w, kMax, true);
    if (!content) return content.error();
    Secret whole(std::move(*content));  // wiped when it goes, whatever the outcome
    std::string_view c = whole.reveal();
    if (c.size() > kMax) return invalid(w + " is longer than one line user:password");
    if (c.size() >= 2 && c.substr(c.size() - 2) == "\r\n") {
        c.remove_suffix(2);
    } else if (!c.empty() && c.back() == '\n') {
        c.remove_suffix(1);
    }
    if (c.empty()) return invalid(w + " is empty: it holds one line user:password");
    if (c.find_first_of("\r\n") != std::string_view::npos) return invalid(w + " must be one line user:password");
    if (has_control(c)) return invalid(w + " holds a control character");
    std::size_t colon = c.find(':');
    if (colon == std::string_view::npos) return invalid(w + " must be one line user:password (no ':' found)");
    if (colon == 0) return invalid(w + ": the user before ':' is empty");
    if (colon + 1 == c.size()) return invalid(w + ": the password after ':' is empty");
    Login l;
    l.user = std::string(c.substr(0, colon));
    l.password = Secret(std::string(c.substr(colon + 1)));
    return l;
}

Checked check(const Config &config) {
    Checked out;
    Settings &s = out.settings;
    auto problem = [&](const Error &e) { out.problems.push_back(e.message); };
    if (config.url.empty()) {
        out.problems.emplace_back("signin_smtp is not set: smtp://HOST[:PORT] or smtps://HOST[:PORT]");
    } else if (auto r = parse_relay(config.url)) {
        s.relay = r.value();
    } else {
        problem(r.error());
    }
    if (config.from.empty()) {
        out.problems.emplace_back(
            "signin_smtp needs signin_smtp_from, the sender of the emails, e.g. \"Acme <no-reply@acme.com>\"");
    } else if (auto m = parse_mailbox(config.from, "signin_smtp_from")) {
        s.from = m.value();
    } else {
        problem(m.error());
    }
    if (!config.reply_to.empty()) {
        if (auto m = parse_mailbox(config.reply_to, "signin_smtp_reply_to")) {
            s.reply_to = m.value();
        } else {
            problem(m.error());
        }
    }
    if (!config.auth_file.empty()) {
        if (auto l = read_auth_file(config.auth_file)) {
            s.login = std::move(l.value());
        } else {
            problem(l.error());
        }
    }
    if (!config.trusted_certificate.empty()) {
        // read here, where nginx reads its configuration (as root, like ssl_certificate): the
        // workers are given its contents, so the worker user needs no access to the file
        if (auto pem = read_ca_file(config.trusted_certificate)) {
            s.ca_file = config.trusted_certificate;
            s.ca_pem = std::move(pem.value());
        } else {
            problem(pem.error());
        }
    }
    if (config.timeout < 1000) {
        out.problems.emplace_back("signin_smtp_timeout must be at least 1s");
    } else {
        s.timeout = config.timeout;
    }
    return out;
}

}  // namespace signin::smtp
