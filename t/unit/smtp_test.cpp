// Email over SMTP against a real SMTP server (t/smtp-server: Debian's python3-aiosmtpd), with
// the received message read back by Python's email package: settings and their checks, the
// message's headers and parts, STARTTLS and implicit TLS with a throw-away CA, AUTH, scripted
// refusals, a dead or silent relay, several messages over one connection.
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "signin/emails.hpp"
#include "signin/smtp.hpp"

using namespace signin;
namespace fs = std::filesystem;

namespace {

const Millis kNow = 1767225600000;  // 2026-01-01T00:00:00Z

// t/, beside this file's directory
fs::path t_dir() { return fs::path(__FILE__).parent_path().parent_path(); }
std::string server_script() { return (t_dir() / "smtp-server").string(); }

// Why the tests that need a server cannot run here, or "" when they can.
const std::string &missing_server() {
    static const std::string why = [] {
        if (std::system("/usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1") != 0) {
            return std::string("python3-aiosmtpd is not installed (build.sh's test packages install it)");
        }
        if (std::system("openssl version >/dev/null 2>&1") != 0) {
            return std::string("the openssl command is not installed (the throw-away CA needs it)");
        }
        return std::string();
    }();
    return why;
}

#define NEED_SERVER()                                                     \
    do {                                                                  \
        if (!missing_server().empty()) GTEST_SKIP() << missing_server(); \
    } while (0)

bool has(const std::string &hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

std::string read_file(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "signin-smtp-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// The program's standard output, or nullopt when it failed.
std::optional<std::string> run(const std::string &command) {
    FILE *p = popen(command.c_str(), "r");
    if (p == nullptr) return std::nullopt;
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    return pclose(p) == 0 ? std::optional<std::string>(out) : std::nullopt;
}

// Two throw-away CAs made once: the server's certificate is signed by `good`, and names localhost,
// 127.0.0.1 and relay.test; `wrong` signed nothing of it.
struct Cas {
    TempDir dir;
    fs::path good, wrong;
    Cas() {
        good = dir.path / "good";
        wrong = dir.path / "wrong";
        for (const auto &[d, names] : {std::pair{good, " localhost 127.0.0.1 relay.test"}, std::pair{wrong, ""}}) {
            if (!run(server_script() + " ca " + d.string() + names)) throw std::runtime_error("t/smtp-server ca failed");
        }
    }
    std::string good_ca() const { return (good / "ca.pem").string(); }
    std::string wrong_ca() const { return (wrong / "ca.pem").string(); }
};
const Cas &cas() {
    static Cas c;
    return c;
}

// t/smtp-server serve with `args`, stopped (SIGTERM) when the object goes.
class Server {
public:
    explicit Server(std::vector<std::string> args) {
        std::vector<std::string> argv = {server_script(), "serve", "--dir", dir_.path.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        int out[2];
        if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        pid_ = fork();
        const std::string log = (dir_.path / "server.log").string();
        if (pid_ == 0) {
            // gone with the test, whatever becomes of it; its stderr in its own directory
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            dup2(out[1], 1);
            int err = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (err >= 0) dup2(err, 2);
            std::vector<char *> a;
            for (auto &s : argv) a.push_back(s.data());
            a.push_back(nullptr);
            execv(a[0], a.data());
            _exit(127);
        }
        close(out[1]);
        std::string line;
        pollfd pfd{out[0], POLLIN, 0};
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            if (poll(&pfd, 1, 200) <= 0) continue;
            char c[64];
            ssize_t n = read(out[0], c, sizeof c);
            if (n <= 0) break;
            line.append(c, static_cast<std::size_t>(n));
        }
        close(out[0]);
        port_ = std::atoi(line.c_str());
        if (port_ <= 0) throw std::runtime_error("t/smtp-server did not start");
    }
    ~Server() {
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    int port() const { return port_; }
    std::string port_text() const { return std::to_string(port_); }
    const fs::path &dir() const { return dir_.path; }

    // The messages received, in order (NNNN.eml).
    std::vector<fs::path> messages() const {
        std::vector<fs::path> out;
        for (const auto &e : fs::directory_iterator(dir_.path)) {
            if (e.path().extension() == ".eml") out.push_back(e.path());
        }
        std::sort(out.begin(), out.end());
        return out;
    }
    std::string envelope(const fs::path &eml) const {
        fs::path j = eml;
        return read_file(j.replace_extension(".json"));
    }
    std::string events() const { return read_file(dir_.path / "events.log"); }
    std::size_t count_events(std::string_view prefix) const {
        std::istringstream in(events());
        std::size_t n = 0;
        for (std::string l; std::getline(in, l);) n += l.rfind(prefix, 0) == 0;
        return n;
    }

private:
    TempDir dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// The parsed message (t/smtp-server parse): a cJSON tree freed with the object.
struct Parsed {
    cJSON *root = nullptr;
    explicit Parsed(const fs::path &eml) {
        auto out = run(server_script() + " parse " + eml.string());
        if (!out) throw std::runtime_error("t/smtp-server parse failed");
        root = cJSON_Parse(out->c_str());
        if (root == nullptr) throw std::runtime_error("unparsable: " + *out);
    }
    ~Parsed() { cJSON_Delete(root); }
    Parsed(const Parsed &) = delete;
    Parsed &operator=(const Parsed &) = delete;
    static std::string str(const cJSON *o, const char *key) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : std::string("<absent>");
    }
    std::string header(const char *name) const { return str(cJSON_GetObjectItem(root, "headers"), name); }
    std::string raw_header(const char *name) const { return str(cJSON_GetObjectItem(root, "raw_headers"), name); }
    std::string top(const char *key) const { return str(root, key); }
    int number(const char *key) const { return cJSON_GetObjectItem(root, key)->valueint; }
    bool flag(const char *key) const { return cJSON_IsTrue(cJSON_GetObjectItem(root, key)); }
    int array_size(const char *key) const { return cJSON_GetArraySize(cJSON_GetObjectItem(root, key)); }
    const cJSON *part(int i) const { return cJSON_GetArrayItem(cJSON_GetObjectItem(root, "parts"), i); }
};

std::string without_cr(std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '\r'), s.end());
    return s;
}

// Settings for `url` with a From and a 10 s timeout, then `edit`'s changes.
smtp::Settings settings_for(const std::string &url, const std::function<void(smtp::Config &)> &edit = {}) {
    smtp::Config c;
    c.url = url;
    c.from = "\"Acme, Sign-in\" <no-reply@acme.example>";
    c.timeout = 10000;
    if (edit) edit(c);
    smtp::Checked checked = smtp::check(c);
    if (!checked.ok()) throw std::runtime_error("settings: " + checked.problems.front());
    return checked.settings;
}

smtp::Message simple(std::string to = "ann@example.com", std::string subject = "Your code") {
    return smtp::Message{std::move(to), std::move(subject), "Hello\nA1B2-C3D4\n", "<p>Hello <b>A1B2-C3D4</b></p>\n"};
}

std::string auth_file(const TempDir &d, const std::string &content) {
    fs::path p = d.path / "auth";
    std::ofstream(p) << content;
    return p.string();
}

// A port on 127.0.0.1 where nothing listens.
int closed_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

class SmtpEnv : public ::testing::Environment {
public:
    void SetUp() override { ASSERT_TRUE(smtp::global_init().ok()); }
};
const auto *const kEnv = ::testing::AddGlobalTestEnvironment(new SmtpEnv);

// ---------------------------------------------------------------- settings

TEST(SmtpSettings, RelayUrls) {
    auto r = smtp::parse_relay("smtp://Relay.Example.com");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->host, "relay.example.com");
    EXPECT_EQ(r->port, 587);
    EXPECT_FALSE(r->implicit_tls);
    EXPECT_FALSE(r->loopback);
    EXPECT_EQ(r->url(), "smtp://relay.example.com:587");
    r = smtp::parse_relay("smtps://mail.example.com:2465/");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->implicit_tls);
    EXPECT_EQ(r->port, 2465);
    EXPECT_EQ(smtp::parse_relay("smtps://mail.example.com")->port, 465);
    EXPECT_TRUE(smtp::parse_relay("smtp://127.0.0.1:25")->loopback);
    EXPECT_TRUE(smtp::parse_relay("smtp://localhost:25")->loopback);
    EXPECT_TRUE(smtp::parse_relay("smtp://[::1]:25")->loopback);
    EXPECT_EQ(smtp::parse_relay("smtp://[::1]:25")->url(), "smtp://[::1]:25");
    for (const char *bad : {"http://relay.example.com", "relay.example.com", "smtp://", "smtp://:25",
                            "smtp://relay.example.com:0", "smtp://relay.example.com:65536", "smtp://relay.example.com:x",
                            "smtp://relay.example.com/path", "smtp://relay.example.com?x", "smtp://re lay.example.com",
                            "smtp://relay_example.com", "smtp://-relay.example.com", "smtp://[zz]:25"}) {
        auto b = smtp::parse_relay(bad);
        EXPECT_FALSE(b.ok()) << bad;
        if (!b.ok()) {
            EXPECT_TRUE(has(b.error().message, "signin_smtp")) << b.error().message;
        }
    }
    auto creds = smtp::parse_relay("smtp://user:hunter2@relay.example.com");
    ASSERT_FALSE(creds.ok());
    EXPECT_FALSE(has(creds.error().message, "hunter2")) << "a password in the URL is not repeated";
    EXPECT_TRUE(has(creds.error().message, "signin_smtp_auth_file"));
}

TEST(SmtpSettings, Mailboxes) {
    auto m = smtp::parse_mailbox("Acme <no-reply@acme.example>", "signin_smtp_from");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->name, "Acme");
    EXPECT_EQ(m->address, "no-reply@acme.example");
    EXPECT_EQ(m->domain(), "acme.example");
    m = smtp::parse_mailbox("  No-Reply@Acme.Example ", "signin_smtp_from");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->name, "");
    EXPECT_EQ(m->address, "No-Reply@Acme.Example");
    m = smtp::parse_mailbox("\"Acme \\\"Sign-in\\\", Inc.\" <a@acme.example>", "x");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->name, "Acme \"Sign-in\", Inc.");
    m = smtp::parse_mailbox("Café Zürich <a@acme.example>", "x");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->name, "Café Zürich");
    EXPECT_TRUE(smtp::parse_mailbox("<a@acme.example>", "x").ok());
    for (const char *bad : {"", "acme", "Acme <>", "Acme <a@acme>", "Acme a@acme.example", "Acme <a@acme.example",
                            "Acme <a@acme.example>\r\nBcc: x@evil.example", "Ac\"me <a@acme.example>",
                            "<jöe@acme.example>", "\"Acme \" x\" <a@acme.example>", "Acme <a@ac me.example>",
                            "\xff <a@acme.example>"}) {
        auto b = smtp::parse_mailbox(bad, "signin_smtp_from");
        EXPECT_FALSE(b.ok()) << bad;
        if (!b.ok()) {
            EXPECT_TRUE(has(b.error().message, "signin_smtp_from")) << b.error().message;
        }
    }
    EXPECT_TRUE(has(smtp::parse_mailbox("<jöe@acme.example>", "f").error().message, "ASCII"));
}

TEST(SmtpSettings, AuthFile) {
    TempDir d;
    auto l = smtp::read_auth_file(auth_file(d, "mailer:pa:ss word\n"));
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->user, "mailer");
    EXPECT_EQ(l->password.reveal(), "pa:ss word");
    EXPECT_TRUE(smtp::read_auth_file(auth_file(d, "mailer:pw\r\n")).ok());
    EXPECT_TRUE(smtp::read_auth_file(auth_file(d, "mailer:pw")).ok());
    for (const char *bad : {"", "\n", "nopassword-sEcReT\n", ":sEcReT\n", "user:\n", "user:sEcReT\nsecond:line\n",
                            "user:sEc\x01ReT\n"}) {
        auto b = smtp::read_auth_file(auth_file(d, bad));
        ASSERT_FALSE(b.ok()) << bad;
        EXPECT_FALSE(has(b.error().message, "sEc")) << "the file's contents never appear: " << b.error().message;
        EXPECT_TRUE(has(b.error().message, "signin_smtp_auth_file")) << b.error().message;
    }
    // one line of up to 4 KB is read whole; a longer file is refused, never cut to a shorter password
    const std::string longest = "mailer:" + std::string(4096 - 7, 'p');
    auto whole = smtp::read_auth_file(auth_file(d, longest));
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(whole->password.reveal().size(), 4096u - 7);
    auto longer = smtp::read_auth_file(auth_file(d, longest + "p"));
    ASSERT_FALSE(longer.ok());
    EXPECT_TRUE(has(longer.error().message, "longer than one line")) << longer.error().message;
    auto missing = smtp::read_auth_file((d.path / "none").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(has(missing.error().message, "cannot be read")) << missing.error().message;
    // a directory opens but does not read (root reads any file, so no chmod here)
    auto dir = smtp::read_auth_file(d.path.string());
    ASSERT_FALSE(dir.ok());
    EXPECT_TRUE(has(dir.error().message, "cannot be read")) << dir.error().message;
}

TEST(SmtpSettings, CheckNamesEveryProblemOnItsOwn) {
    TempDir d;
    smtp::Config c;
    c.url = "smtp://relay.example.com";
    c.from = "Acme <no-reply@acme.example>";
    auto good = smtp::check(c);
    ASSERT_TRUE(good.ok()) << good.problems.front();
    EXPECT_EQ(good.settings.timeout, 30000);
    EXPECT_FALSE(good.settings.login);
    EXPECT_EQ(good.settings.ca_file, "");

    c.reply_to = "help@acme.example";
    c.auth_file = auth_file(d, "mailer:secret-pw\n");
    c.trusted_certificate = auth_file(d, "mailer:secret-pw\n");  // any readable file
    auto full = smtp::check(c);
    ASSERT_TRUE(full.ok()) << full.problems.front();
    ASSERT_TRUE(full.settings.login);
    EXPECT_EQ(full.settings.login->user, "mailer");
    EXPECT_EQ(full.settings.reply_to->address, "help@acme.example");

    smtp::Config bad;
    bad.url = "smtp://relay.example.com/x";
    bad.reply_to = "not an address";
    bad.auth_file = (d.path / "missing").string();
    bad.trusted_certificate = (d.path / "missing-ca.pem").string();
    bad.timeout = 10;
    auto checked = smtp::check(bad);
    ASSERT_EQ(checked.problems.size(), 6u);  // URL, From missing, Reply-To, auth file, CA file, timeout
    EXPECT_TRUE(has(checked.problems[0], "signin_smtp is smtp://")) << checked.problems[0];
    EXPECT_TRUE(has(checked.problems[1], "signin_smtp_from")) << checked.problems[1];
    EXPECT_TRUE(has(checked.problems[2], "signin_smtp_reply_to")) << checked.problems[2];
    EXPECT_TRUE(has(checked.problems[3], "signin_smtp_auth_file")) << checked.problems[3];
    EXPECT_TRUE(has(checked.problems[4], "signin_smtp_trusted_certificate")) << checked.problems[4];
    EXPECT_TRUE(has(checked.problems[5], "signin_smtp_timeout")) << checked.problems[5];
    for (const auto &p : checked.problems) EXPECT_EQ(p.find('\n'), std::string::npos) << "one line each: " << p;

    // the CA file is read whole with the configuration; an empty one is refused
    c.trusted_certificate = (d.path / "empty-ca.pem").string();
    std::ofstream(c.trusted_certificate).close();
    auto empty = smtp::check(c);
    ASSERT_EQ(empty.problems.size(), 1u);
    EXPECT_TRUE(has(empty.problems[0], "signin_smtp_trusted_certificate")) << empty.problems[0];
    EXPECT_TRUE(has(empty.problems[0], "is empty")) << empty.problems[0];
}

// ---------------------------------------------------------------- composing

TEST(SmtpMessage, QuotedPrintable) {
    EXPECT_EQ(smtp::quoted_printable("a=b\n"), "a=3Db\r\n");
    EXPECT_EQ(smtp::quoted_printable("trailing \nx\t\n"), "trailing=20\r\nx=09\r\n");
    EXPECT_EQ(smtp::quoted_printable("From here\nsaid From x\n"), "=46rom here\r\nsaid From x\r\n");
    EXPECT_EQ(smtp::quoted_printable("caf\xc3\xa9"), "caf=C3=A9");
    EXPECT_EQ(smtp::quoted_printable(".\n..x\r\n"), ".\r\n..x\r\n") << "dot-stuffing is libcurl's";
    std::string longline(200, 'x');
    std::string qp = smtp::quoted_printable(longline + "\n" + std::string(100, '\xe2') + "\n");
    std::istringstream in(qp);
    for (std::string l; std::getline(in, l);) {
        ASSERT_FALSE(l.empty());
        EXPECT_EQ(l.back(), '\r');
        EXPECT_LE(l.size(), 77u) << l;  // 76 and the CR
    }
    EXPECT_EQ(qp.find("=\r\n=E2"), qp.find("=\r\n=E2")) << "an escape is never cut";
    for (std::size_t i = 0; (i = qp.find('=', i)) != std::string::npos; ++i) {
        ASSERT_LT(i + 1, qp.size());
        EXPECT_TRUE(qp[i + 1] == '\r' || std::isxdigit(static_cast<unsigned char>(qp[i + 1]))) << i;
    }
}

TEST(SmtpMessage, HeaderText) {
    EXPECT_EQ(smtp::encode_header_text("Your sign-in code", 9), "Your sign-in code");
    EXPECT_EQ(smtp::encode_header_text("a =?b?= c", 9).rfind("=?UTF-8?B?", 0), 0u) << "never taken for an encoded word";
    std::string enc = smtp::encode_header_text("Ihr Anmeldecode für Café", 9);
    EXPECT_EQ(enc.rfind("=?UTF-8?B?", 0), 0u) << enc;
    std::string long_utf8;
    for (int i = 0; i < 40; ++i) long_utf8 += "Zürich ";
    enc = smtp::encode_header_text(long_utf8, 9);
    std::size_t first = enc.find("\r\n");
    ASSERT_NE(first, std::string::npos);
    EXPECT_LE(first + 9, 76u);
    std::istringstream in(enc);
    for (std::string l; std::getline(in, l);) EXPECT_LE(l.size(), 77u) << l;
    std::string long_ascii;
    for (int i = 0; i < 30; ++i) long_ascii += "word ";
    enc = smtp::encode_header_text(long_ascii, 9);
    EXPECT_EQ(enc.find("=?"), std::string::npos) << "plain ASCII is folded, not encoded";
    EXPECT_NE(enc.find("\r\n "), std::string::npos);
}

TEST(SmtpMessage, Composed) {
    smtp::Settings s = settings_for("smtp://relay.example.com",
                                    [&](smtp::Config &c) { c.reply_to = "Help Desk <help@acme.example>"; });
    std::string m = smtp::compose(s, simple(), kNow);
    EXPECT_EQ(m.rfind("Date: Thu, 01 Jan 2026 00:00:00 +0000\r\n", 0), 0u) << m.substr(0, 60);
    EXPECT_TRUE(has(m, "\r\nFrom: \"Acme, Sign-in\" <no-reply@acme.example>\r\n"));
    EXPECT_TRUE(has(m, "\r\nReply-To: Help Desk <help@acme.example>\r\n"));
    EXPECT_TRUE(has(m, "\r\nTo: ann@example.com\r\n"));
    EXPECT_TRUE(has(m, "\r\nSubject: Your code\r\n"));
    EXPECT_TRUE(has(m, "@acme.example>\r\nMIME-Version: 1.0\r\n"));
    EXPECT_TRUE(has(m, "\r\nAuto-Submitted: auto-generated\r\n"));
    EXPECT_TRUE(has(m, "Content-Type: multipart/alternative;\r\n boundary=\"=_signin_"));
    EXPECT_EQ(without_cr(m).size() + std::count(m.begin(), m.end(), '\n'), m.size()) << "every LF after a CR";
    EXPECT_NE(smtp::compose(s, simple(), kNow), m) << "a fresh Message-ID and boundary";
    smtp::Message text_only = simple();
    text_only.html.clear();
    std::string t = smtp::compose(s, text_only, kNow);
    EXPECT_TRUE(has(t, "Content-Type: text/plain; charset=UTF-8\r\n"));
    EXPECT_FALSE(has(t, "multipart"));
}

// ---------------------------------------------------------------- sending to a real server

TEST(SmtpSend, MessageReadBackByPythonsEmailPackage) {
    NEED_SERVER();
    Server server({});
    smtp::Settings s = settings_for("smtp://127.0.0.1:" + server.port_text(),
                                    [&](smtp::Config &c) { c.from = "Acme Café <no-reply@acme.example>"; c.reply_to = "help@acme.example"; });
    const std::string subject = "Ihr Anmeldecode für Café Zürich — bitte sofort verwenden, gültig 10 Minuten 🎉";
    std::string text = "Hello,\n.\n.hidden line\n..two dots\nFrom the start\ntrailing space \n";
    text += std::string(300, 'y') + " " + std::string(1200, 'z') + "\n";
    text += "Grüße\n";
    const std::string html = "<p>Grüße</p>\n.\n<p>" + std::string(2000, 'h') + "</p>\n";
    smtp::Session session(s);
    auto r = session.send(smtp::Message{"ann@example.com", subject, text, html}, kNow);
    ASSERT_EQ(r.outcome, smtp::Outcome::Sent) << r.error;
    EXPECT_EQ(r.reply, 250);
    EXPECT_EQ(r.error, "");
    auto files = server.messages();
    ASSERT_EQ(files.size(), 1u);
    Parsed p(files[0]);
    EXPECT_EQ(p.array_size("defects"), 0);
    EXPECT_FALSE(p.flag("bare_lf"));
    EXPECT_LE(p.number("longest_line"), 76) << "within SMTP's 998, and quoted-printable's 76";
    EXPECT_EQ(p.header("From"), "Acme Café <no-reply@acme.example>");
    EXPECT_EQ(p.header("Reply-To"), "help@acme.example");
    EXPECT_EQ(p.header("To"), "ann@example.com");
    EXPECT_EQ(p.header("Subject"), subject);
    EXPECT_EQ(p.raw_header("Subject").rfind("=?UTF-8?B?", 0), 0u) << p.raw_header("Subject");
    EXPECT_EQ(p.header("Date"), "Thu, 01 Jan 2026 00:00:00 +0000");
    const std::string id = p.header("Message-ID");
    EXPECT_EQ(id.front(), '<');
    EXPECT_TRUE(id.size() > 16 && id.substr(id.size() - 14) == "@acme.example>") << id;
    EXPECT_EQ(p.header("MIME-Version"), "1.0");
    EXPECT_EQ(p.header("Auto-Submitted"), "auto-generated");
    EXPECT_EQ(p.top("content_type"), "multipart/alternative");
    ASSERT_EQ(p.array_size("parts"), 2);
    const cJSON *plain = p.part(0), *rich = p.part(1);
    EXPECT_EQ(Parsed::str(plain, "content_type"), "text/plain");
    EXPECT_EQ(Parsed::str(plain, "charset"), "utf-8");
    EXPECT_EQ(Parsed::str(plain, "transfer_encoding"), "quoted-printable");
    EXPECT_EQ(without_cr(Parsed::str(plain, "text")), text) << "every line back, the lone '.' and '..' included";
    EXPECT_EQ(Parsed::str(rich, "content_type"), "text/html");
    EXPECT_EQ(without_cr(Parsed::str(rich, "text")), html);
    const std::string envelope = server.envelope(files[0]);
    EXPECT_TRUE(has(envelope, "\"mail_from\": \"no-reply@acme.example\"")) << envelope;
    EXPECT_TRUE(has(envelope, "\"rcpt_tos\": [\"ann@example.com\"]")) << envelope;
    EXPECT_TRUE(has(envelope, "\"tls\": false")) << "plain SMTP on loopback when not offered";
}

TEST(SmtpSend, TheBuiltInEmailsGoOutAsTheySay) {
    NEED_SERVER();
    Server server({});
    smtp::Settings s = settings_for("smtp://localhost:" + server.port_text());
    Emails emails;
    Delivery d;
    d.email = "ann@example.com";
    d.purpose = Purpose::SignIn;
    d.token = Secret("ABCD-EFGH-1234");
    d.code = "WXYZ-2345";
    Email e = emails.render(d, "https://app.example.com");
    auto r = smtp::send_batch(s, {smtp::message(e, d.email)}, kNow);
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].outcome, smtp::Outcome::Sent) << r[0].error;
    Parsed p(server.messages().at(0));
    EXPECT_EQ(p.header("Subject"), e.subject);
    EXPECT_EQ(without_cr(Parsed::str(p.part(0), "text")), e.text);
    EXPECT_EQ(without_cr(Parsed::str(p.part(1), "text")), e.html);
    EXPECT_TRUE(has(Parsed::str(p.part(0), "text"), "WXYZ-2345"));
}

TEST(SmtpSend, StartTlsWithTheRightCa) {
    NEED_SERVER();
    Server server({"--tls", "starttls", "--cert-dir", cas().good.string()});
    // a name that is not loopback (STARTTLS required), connected to the server on 127.0.0.1
    smtp::Settings s = settings_for("smtp://relay.test:" + server.port_text(),
                                    [&](smtp::Config &c) { c.trusted_certificate = cas().good_ca(); });
    s.connect_to = {"relay.test:" + server.port_text() + ":127.0.0.1:" + server.port_text()};
    auto r = smtp::send_batch(s, {simple()}, kNow);
    ASSERT_EQ(r[0].outcome, smtp::Outcome::Sent) << r[0].error;
    ASSERT_EQ(server.messages().size(), 1u);
    EXPECT_TRUE(has(server.envelope(server.messages()[0]), "\"tls\": true"));
    EXPECT_EQ(server.count_events("starttls 1"), 1u);

    // on loopback STARTTLS is used when offered, and the certificate checked there too
    smtp::Settings local = settings_for("smtp://localhost:" + server.port_text(),
                                        [&](smtp::Config &c) { c.trusted_certificate = cas().good_ca(); });
    r = smtp::send_batch(local, {simple()}, kNow);
    ASSERT_EQ(r[0].outcome, smtp::Outcome::Sent) << r[0].error;
    EXPECT_TRUE(has(server.envelope(server.messages().at(1)), "\"tls\": true"));
}

TEST(SmtpSend, AWrongCaDeliversNothing) {
    NEED_SERVER();
    Server server({"--tls", "starttls", "--cert-dir", cas().good.string()});
    for (const std::string host : {"localhost", "relay.test"}) {
        smtp::Settings s = settings_for("smtp://" + host + ":" + server.port_text(),
                                        [&](smtp::Config &c) { c.trusted_certificate = cas().wrong_ca(); });
        s.connect_to = {"relay.test:" + server.port_text() + ":127.0.0.1:" + server.port_text()};
        auto r = smtp::send_batch(s, {simple(), simple("bob@example.com")}, kNow);
        ASSERT_EQ(r.size(), 2u);
        EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry) << host;
        EXPECT_TRUE(r[0].relay_failure);
        EXPECT_TRUE(has(r[0].error, "certificate")) << r[0].error;
        EXPECT_TRUE(has(r[0].error, "signin_smtp_trusted_certificate")) << r[0].error;
        EXPECT_EQ(r[1].outcome, smtp::Outcome::Retry) << "the rest of the batch waits too";
    }
    // the system's CAs do not know the throw-away one either
    smtp::Settings system = settings_for("smtp://localhost:" + server.port_text());
    auto r = smtp::send_batch(system, {simple()}, kNow);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(has(r[0].error, "the system's CAs")) << r[0].error;
    EXPECT_TRUE(server.messages().empty());
    EXPECT_EQ(server.count_events("mail"), 0u);
    EXPECT_EQ(server.count_events("connect"), 3u) << "one connection per batch, given up after the handshake";
}

TEST(SmtpSend, ImplicitTls) {
    NEED_SERVER();
    Server server({"--tls", "implicit", "--cert-dir", cas().good.string()});
    smtp::Settings s = settings_for("smtps://localhost:" + server.port_text(),
                                    [&](smtp::Config &c) { c.trusted_certificate = cas().good_ca(); });
    auto r = smtp::send_batch(s, {simple()}, kNow);
    ASSERT_EQ(r[0].outcome, smtp::Outcome::Sent) << r[0].error;
    EXPECT_TRUE(has(server.envelope(server.messages().at(0)), "\"tls\": true"));
    s = settings_for("smtps://localhost:" + server.port_text(), [&](smtp::Config &c) { c.trusted_certificate = cas().wrong_ca(); });
    r = smtp::send_batch(s, {simple()}, kNow);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_EQ(server.messages().size(), 1u);
}

TEST(SmtpSend, AuthPlainAndLoginAfterStartTls) {
    NEED_SERVER();
    TempDir d;
    for (const char *mech : {"PLAIN", "LOGIN"}) {
        Server server({"--tls", "starttls", "--cert-dir", cas().good.string(), "--auth", "mailer:Tr0ub4dor&3",
                       "--auth-mechs", mech});
        smtp::Settings s =
            settings_for("smtp://localhost:" + server.port_text(),
                         [&](smtp::Config &c) { c.auth_file = auth_file(d, "mailer:Tr0ub4dor&3\n"); c.trusted_certificate = cas().good_ca(); });
        auto r = smtp::send_batch(s, {simple(), simple("bob@example.com")}, kNow);
        ASSERT_EQ(r[0].outcome, smtp::Outcome::Sent) << mech << ": " << r[0].error;
        ASSERT_EQ(r[1].outcome, smtp::Outcome::Sent) << mech << ": " << r[1].error;
        EXPECT_EQ(server.count_events(std::string("auth 1 ") + mech + " mailer ok"), 1u) << server.events();
        EXPECT_EQ(server.count_events("auth"), 1u) << "one login for the batch";
        EXPECT_TRUE(has(server.envelope(server.messages().at(0)), "\"user\": \"mailer\""));
    }
    // a wrong password: the relay's 535, retried (the relay or the file may be fixed), the
    // password nowhere in what is said
    Server server({"--tls", "starttls", "--cert-dir", cas().good.string(), "--auth", "mailer:right-one"});
    smtp::Settings s = settings_for("smtp://localhost:" + server.port_text(),
                                    [&](smtp::Config &c) { c.auth_file = auth_file(d, "mailer:Wr0ngPassw0rd\n"); c.trusted_certificate = cas().good_ca(); });
    auto r = smtp::send_batch(s, {simple()}, kNow);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(r[0].relay_failure);
    EXPECT_EQ(r[0].reply, 535);
    EXPECT_TRUE(has(r[0].error, "login")) << r[0].error;
    EXPECT_FALSE(has(r[0].error, "Wr0ng")) << r[0].error;
    EXPECT_TRUE(server.messages().empty());
}

TEST(SmtpSend, NoLoginInClearTextOffLoopback) {
    NEED_SERVER();
    TempDir d;
    // a relay without STARTTLS, under a name that is not loopback: refused before any command
    // that could carry the password
    Server server({"--auth", "mailer:s3cr3t-pw"});
    smtp::Settings s = settings_for("smtp://relay.test:" + server.port_text(),
                                    [&](smtp::Config &c) { c.auth_file = auth_file(d, "mailer:s3cr3t-pw\n"); });
    s.connect_to = {"relay.test:" + server.port_text() + ":127.0.0.1:" + server.port_text()};
    auto r = smtp::send_batch(s, {simple()}, kNow);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(r[0].relay_failure);
    EXPECT_TRUE(has(r[0].error, "STARTTLS")) << r[0].error;
    EXPECT_FALSE(has(r[0].error, "s3cr3t")) << r[0].error;
    EXPECT_EQ(server.count_events("connect"), 1u);
    EXPECT_EQ(server.count_events("auth"), 0u) << server.events();
    EXPECT_EQ(server.count_events("mail"), 0u) << server.events();
    // the same relay on loopback: plain SMTP and AUTH are allowed there
    smtp::Settings local = settings_for("smtp://127.0.0.1:" + server.port_text(),
                                        [&](smtp::Config &c) { c.auth_file = auth_file(d, "mailer:s3cr3t-pw\n"); });
    r = smtp::send_batch(local, {simple()}, kNow);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Sent) << r[0].error;
}

TEST(SmtpSend, TemporaryThenAccepted) {
    NEED_SERVER();
    Server server({"--rcpt", "451,250"});
    smtp::Settings s = settings_for("smtp://127.0.0.1:" + server.port_text());
    smtp::Session session(s);
    auto first = session.send(simple(), kNow);
    EXPECT_EQ(first.outcome, smtp::Outcome::Retry);
    EXPECT_EQ(first.reply, 451);
    EXPECT_FALSE(first.relay_failure) << "this message's refusal, not the relay's";
    EXPECT_TRUE(has(first.error, "recipient")) << first.error;
    EXPECT_TRUE(has(first.error, "451 4.3.0 Scripted temporary failure")) << first.error;
    EXPECT_TRUE(server.messages().empty());
    auto second = session.send(simple(), kNow);
    EXPECT_EQ(second.outcome, smtp::Outcome::Sent) << second.error;
    EXPECT_EQ(server.messages().size(), 1u);
}

TEST(SmtpSend, PermanentRefusals) {
    NEED_SERVER();
    {
        Server server({"--rcpt", "550"});
        auto r = smtp::send_batch(settings_for("smtp://127.0.0.1:" + server.port_text()),
                                  {simple(), simple("bob@example.com")}, kNow);
        EXPECT_EQ(r[0].outcome, smtp::Outcome::Permanent);
        EXPECT_EQ(r[0].reply, 550);
        EXPECT_TRUE(has(r[0].error, "recipient: 550")) << r[0].error;
        EXPECT_EQ(r[1].outcome, smtp::Outcome::Permanent) << "the next message is still tried";
        EXPECT_EQ(server.count_events("rcpt"), 2u);
        EXPECT_TRUE(server.messages().empty());
    }
    {
        Server server({"--data", "554,250"});
        auto r = smtp::send_batch(settings_for("smtp://127.0.0.1:" + server.port_text()),
                                  {simple(), simple("bob@example.com")}, kNow);
        EXPECT_EQ(r[0].outcome, smtp::Outcome::Permanent);
        EXPECT_EQ(r[0].reply, 554);
        EXPECT_TRUE(has(r[0].error, "message")) << r[0].error;
        EXPECT_EQ(r[1].outcome, smtp::Outcome::Sent) << r[1].error;
    }
    {
        Server server({"--mail", "553"});
        auto r = smtp::send_batch(settings_for("smtp://127.0.0.1:" + server.port_text()), {simple()}, kNow);
        EXPECT_EQ(r[0].outcome, smtp::Outcome::Permanent);
        EXPECT_EQ(r[0].reply, 553);
        EXPECT_TRUE(has(r[0].error, "sender")) << r[0].error;
    }
}

TEST(SmtpSend, RelayDownOrSilent) {
    const int port = closed_port();
    smtp::Settings s = settings_for("smtp://127.0.0.1:" + std::to_string(port));
    auto r = smtp::send_batch(s, {simple(), simple("bob@example.com"), simple("carl@example.com")}, kNow);
    ASSERT_EQ(r.size(), 3u);
    for (const auto &x : r) {
        EXPECT_EQ(x.outcome, smtp::Outcome::Retry);
        EXPECT_TRUE(x.relay_failure);
        EXPECT_EQ(x.reply, 0);
        EXPECT_TRUE(has(x.error, "cannot connect")) << x.error;
    }
    // a relay that takes the connection and says nothing: the timeout ends the wait
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(listen(fd, 8), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    s = settings_for("smtp://127.0.0.1:" + std::to_string(ntohs(a.sin_port)), [&](smtp::Config &c) { c.timeout = 1000; });
    auto t0 = std::chrono::steady_clock::now();
    r = smtp::send_batch(s, {simple(), simple("bob@example.com")}, kNow);
    auto took = std::chrono::steady_clock::now() - t0;
    close(fd);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(has(r[0].error, "did not answer in time")) << r[0].error;
    EXPECT_EQ(r[1].outcome, smtp::Outcome::Retry);
    EXPECT_LT(took, std::chrono::seconds(5)) << "one wait for the batch";
}

TEST(SmtpSend, DroppedConnectionIsRetried) {
    NEED_SERVER();
    Server server({"--data", "drop,250"});
    smtp::Settings s = settings_for("smtp://127.0.0.1:" + server.port_text());
    smtp::Session session(s);
    auto r = session.send(simple(), kNow);
    EXPECT_EQ(r.outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(r.relay_failure);
    r = session.send(simple(), kNow);
    EXPECT_EQ(r.outcome, smtp::Outcome::Sent) << r.error;
    EXPECT_EQ(session.connections(), 2u);
}

TEST(SmtpSend, SeveralMessagesOverOneConnection) {
    NEED_SERVER();
    TempDir d;
    Server server({"--tls", "starttls", "--cert-dir", cas().good.string(), "--auth", "mailer:pw"});
    smtp::Settings s = settings_for("smtp://relay.test:" + server.port_text(),
                                    [&](smtp::Config &c) { c.auth_file = auth_file(d, "mailer:pw\n"); c.trusted_certificate = cas().good_ca(); });
    s.connect_to = {"relay.test:" + server.port_text() + ":127.0.0.1:" + server.port_text()};
    std::vector<smtp::Message> batch;
    for (int i = 0; i < 6; ++i) batch.push_back(simple("user" + std::to_string(i) + "@example.com"));
    auto r = smtp::send_batch(s, batch, kNow);
    ASSERT_EQ(r.size(), 6u);
    for (const auto &x : r) EXPECT_EQ(x.outcome, smtp::Outcome::Sent) << x.error;
    auto files = server.messages();
    ASSERT_EQ(files.size(), 6u);
    for (std::size_t i = 0; i < files.size(); ++i) {
        std::string env = server.envelope(files[i]);
        EXPECT_TRUE(has(env, "\"connection\": 1,")) << env;
        EXPECT_TRUE(has(env, "user" + std::to_string(i) + "@example.com")) << "in order: " << env;
    }
    EXPECT_EQ(server.count_events("connect"), 1u);
    EXPECT_EQ(server.count_events("starttls"), 1u);
    EXPECT_EQ(server.count_events("auth"), 1u);
}

TEST(SmtpSend, AKeptSessionCarriesTheNextBatch) {
    NEED_SERVER();
    Server server({});
    smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
    for (int round = 0; round < 3; ++round) {
        auto r = smtp::send_batch(session, {simple(), simple("bob@example.com")}, kNow);
        ASSERT_EQ(r.size(), 2u);
        for (const auto &x : r) EXPECT_EQ(x.outcome, smtp::Outcome::Sent) << x.error;
    }
    EXPECT_EQ(server.messages().size(), 6u);
    EXPECT_EQ(session.connections(), 1u);
    EXPECT_EQ(server.count_events("connect"), 1u) << "one connection for the three batches";
}

TEST(SmtpSend, AKeptConnectionTheRelayClosedIsOpenedAgain) {
    NEED_SERVER();
    {
        // closed while idle (the relay's timeout): found before the send
        Server server({"--idle-timeout", "0.5"});
        smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
        EXPECT_EQ(session.send(simple(), kNow).outcome, smtp::Outcome::Sent);
        usleep(1500 * 1000);
        auto r = session.send(simple("bob@example.com"), kNow);
        EXPECT_EQ(r.outcome, smtp::Outcome::Sent) << r.error;
        EXPECT_EQ(session.connections(), 2u);
        EXPECT_EQ(server.messages().size(), 2u);
    }
    {
        // closed as the next MAIL went out, with no reply: that one send is made again, once
        Server server({"--mail", "250,drop,250"});
        smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
        EXPECT_EQ(session.send(simple(), kNow).outcome, smtp::Outcome::Sent);
        auto r = session.send(simple("bob@example.com"), kNow);
        EXPECT_EQ(r.outcome, smtp::Outcome::Sent) << r.error;
        EXPECT_EQ(session.connections(), 2u);
        auto files = server.messages();
        ASSERT_EQ(files.size(), 2u);
        EXPECT_TRUE(has(server.envelope(files[1]), "bob@example.com"));
    }
    {
        // a drop on a new connection is the relay's failure: not tried again at once
        Server server({"--mail", "drop,250"});
        smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
        auto r = session.send(simple(), kNow);
        EXPECT_EQ(r.outcome, smtp::Outcome::Retry);
        EXPECT_TRUE(r.relay_failure);
        EXPECT_EQ(session.connections(), 1u);
        EXPECT_TRUE(server.messages().empty());
    }
}

TEST(SmtpSend, NonAsciiRecipientNeedsSmtpUtf8) {
    NEED_SERVER();
    const std::string to = "jöran@example.com";
    {
        Server server({});
        smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
        auto r = session.send(simple(to), kNow);
        EXPECT_EQ(r.outcome, smtp::Outcome::Permanent);
        EXPECT_TRUE(has(r.error, "SMTPUTF8")) << r.error;
        EXPECT_EQ(server.count_events("rcpt"), 0u) << "the address never went out";
        // the connection opened to learn that serves the next message
        EXPECT_EQ(session.send(simple(), kNow).outcome, smtp::Outcome::Sent);
        EXPECT_EQ(session.connections(), 1u);
    }
    {
        Server server({"--smtputf8"});
        smtp::Session session(settings_for("smtp://127.0.0.1:" + server.port_text()));
        EXPECT_EQ(session.send(simple(), kNow).outcome, smtp::Outcome::Sent);
        auto r = session.send(simple(to), kNow);
        ASSERT_EQ(r.outcome, smtp::Outcome::Sent) << r.error;
        auto files = server.messages();
        ASSERT_EQ(files.size(), 2u);
        std::string env = server.envelope(files[1]);
        EXPECT_TRUE(has(env, "SMTPUTF8")) << "libcurl says SMTPUTF8 in MAIL FROM: " << env;
        Parsed p(files[1]);
        EXPECT_EQ(p.header("To"), to);
        EXPECT_EQ(session.connections(), 1u);
    }
    auto bad = smtp::Session(settings_for("smtp://127.0.0.1:1")).send(simple("x@y.example\r\nRCPT TO:<z@z.example>"), kNow);
    EXPECT_EQ(bad.outcome, smtp::Outcome::Permanent) << "no command smuggled through the address";
}

TEST(SmtpSend, CancelStopsASend) {
    NEED_SERVER();
    Server server({});
    std::atomic<bool> cancel{true};
    auto r = smtp::send_batch(settings_for("smtp://127.0.0.1:" + server.port_text()), {simple(), simple()}, kNow,
                              &cancel);
    EXPECT_EQ(r[0].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(has(r[0].error, "stopped")) << r[0].error;
    EXPECT_EQ(r[1].outcome, smtp::Outcome::Retry);
    EXPECT_TRUE(server.messages().empty());
}

}  // namespace
