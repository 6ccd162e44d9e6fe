// The ready-made browser pages (signin/pages.hpp): templates and assets embedded from src/pages.
#include "signin/pages.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <set>
#include <stdexcept>
#include <vector>

#include "encoding.hpp"
#include "embedded_data.hpp"
#include "signin/emails.hpp"

namespace signin::pages {
namespace {

using signin::EmbeddedFile;

const EmbeddedFile *embedded(std::string_view name) {
    for (std::size_t i = 0; i < pages_data::kFileCount; i++) {
        if (pages_data::kFiles[i].name == name) return &pages_data::kFiles[i];
    }
    return nullptr;
}

std::string_view content_type_of(std::string_view name) {
    auto ends_with = [name](std::string_view suffix) {
        return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
    };
    if (ends_with(".css")) return "text/css; charset=utf-8";
    if (ends_with(".js")) return "text/javascript; charset=utf-8";
    if (ends_with(".svg")) return "image/svg+xml";
    return {};  // a template, or anything else: not served
}

// The assets, built once: every embedded file with a content type.
const std::vector<Asset> &assets() {
    static const std::vector<Asset> all = [] {
        std::vector<Asset> out;
        for (std::size_t i = 0; i < pages_data::kFileCount; i++) {
            const EmbeddedFile &f = pages_data::kFiles[i];
            std::string_view type = content_type_of(f.name);
            if (!type.empty()) out.push_back(Asset{f.name, type, f.body, f.hash});
        }
        return out;
    }();
    return all;
}

std::string escaped(std::string_view s) {
    std::string out;
    append_html_escaped(out, s);
    return out;
}

// A path as a query value: everything but unreserved characters and '/' percent-encoded.
std::string query_value(std::string_view v) { return enc::percent_encode(v, true); }

// The directory of signin_login_url: "/auth/?x" -> "/auth/", "https://a.example/in" -> "https://a.example/".
std::string_view login_dir(std::string_view url) {
    url = url.substr(0, url.find_first_of("?#"));
    const auto slash = url.rfind('/');
    const auto scheme = url.find("://");
    if (slash == std::string_view::npos || (scheme != std::string_view::npos && slash < scheme + 3)) return {};
    return url.substr(0, slash + 1);
}

// "https://a.example:8443" of an http(s) URL, or "".
std::string_view url_origin(std::string_view url) {
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos || (url.substr(0, scheme) != "http" && url.substr(0, scheme) != "https")) {
        return {};
    }
    return url.substr(0, url.find_first_of("/?#", scheme + 3));
}

// Writes template `t` to `out`: every {{name}} replaced by what value(name, out) appends, and every
// {{#name}}...{{/name}} section written only if shown(name) (a section does not hold another of
// the same name). A name that value() does not know is written as it stands.
template <class Value, class Shown>
void expand(std::string_view t, const Value &value, const Shown &shown, std::string &out) {
    for (std::size_t pos = 0;;) {
        const std::size_t open = t.find("{{", pos);
        if (open == std::string_view::npos) {
            out.append(t.substr(pos));
            return;
        }
        const std::size_t close = t.find("}}", open + 2);
        out.append(t.substr(pos, open - pos));
        const std::string_view name =
            close == std::string_view::npos ? std::string_view() : t.substr(open + 2, close - open - 2);
        if (!name.empty() && (name.front() == '#' || name.front() == '/')) {
            pos = close + 2;
            if (name.front() == '#' && !shown(name.substr(1))) {
                const std::string end = "{{/" + std::string(name.substr(1)) + "}}";
                const std::size_t at = t.find(end, pos);
                pos = at == std::string_view::npos ? t.size() : at + end.size();
            }
            continue;
        }
        if (close == std::string_view::npos || !value(name, out)) {
            // a template mistake shows up in the unit tests (no "{{" is left in a rendered page)
            out.append(t.substr(open, 2));
            pos = open + 2;
            continue;
        }
        pos = close + 2;
    }
}

// The value of one {{name}} of a page template; false for an unknown name.
bool value_of(std::string_view name, const Settings &s, std::string &out) {
    if (name == "site_name") {
        append_html_escaped(out, s.site_name);
    } else if (name == "email") {
        out += s.email ? "on" : "off";
    } else if (name == "passwords") {
        out += s.passwords ? "on" : "off";
    } else if (name == "registration") {
        out += s.registration ? "on" : "off";
    } else if (name == "mfa") {
        out += s.mfa ? "on" : "off";
    } else if (name == "passkeys") {
        out += s.passkeys ? "on" : "off";
    } else if (name == "remember_days") {
        out += std::to_string(s.remember_days);
    } else if (name == "resend_seconds") {
        out += std::to_string(s.resend_seconds);
    } else if (name == "stylesheet") {
        if (!s.stylesheet.empty()) out += "<link rel=\"stylesheet\" href=\"" + escaped(s.stylesheet) + "\">";
    } else if (name == "account") {
        append_html_escaped(out, s.account);
    } else if (name == "login_url") {
        append_html_escaped(out, s.login_url);
    } else if (name == "login_link") {  // the sign-in page, coming back here
        const bool has_query = s.login_url.find('?') != std::string::npos;
        append_html_escaped(out, s.login_url + (has_query ? "&" : "?") + "return_to=" + query_value(s.return_to));
    } else if (name == "return_to") {
        out += query_value(s.return_to);  // nothing left that HTML would read
    } else if (name == "assets") {
        std::string dir(login_dir(s.login_url));
        append_html_escaped(out, dir + "assets/");
    } else if (name.substr(0, 2) == "v:") {  // {{v:pages.css}}: the asset's hash, for ?v=
        const Asset *a = asset(name.substr(2));
        if (a == nullptr) return false;
        out += a->hash;
    } else {
        return false;
    }
    return true;
}

}  // namespace

const Asset *asset(std::string_view name) {
    for (const Asset &a : assets()) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

namespace {

const char *template_name(Page page) {
    return page == Page::SignIn      ? "signin.html"
           : page == Page::Account   ? "account.html"
           : page == Page::Forbidden ? "forbidden.html"
           : page == Page::Admin     ? "admin.html"
                                     : "unavailable.html";
}

// Every page, in the order of the Page enumeration.
constexpr std::array<Page, 5> kPages = {Page::SignIn, Page::Account, Page::Forbidden, Page::Unavailable, Page::Admin};

// The scripts a page loads (their t("...") strings go into the page's catalog).
std::vector<std::string_view> scripts_of(Page page) {
    switch (page) {
    case Page::SignIn: return {"signin.js", "common.js"};
    case Page::Account: return {"account.js", "common.js"};
    case Page::Forbidden: return {"forbidden.js", "common.js"};
    case Page::Admin: return {"admin.js", "common.js"};
    case Page::Unavailable: break;
    }
    return {};
}

// Runs of white space as one space, none at either end: a text as a template wraps it over lines.
std::string folded(std::string_view text) {
    std::string out;
    bool space = false;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out.push_back(' ');
        space = false;
        out.push_back(c);
    }
    return out;
}

constexpr std::string_view kOpen = "{{_ ", kClose = " _}}";

// Calls f(msgid) for every {{_ ... _}} of a template.
template <class F>
void each_text(std::string_view t, const F &f) {
    for (std::size_t pos = 0;;) {
        const std::size_t open = t.find(kOpen, pos);
        if (open == std::string_view::npos) return;
        const std::size_t close = t.find(kClose, open + kOpen.size());
        if (close == std::string_view::npos) return;
        f(folded(t.substr(open + kOpen.size(), close - open - kOpen.size())));
        pos = close + kClose.size();
    }
}

// Calls f(msgid) for every t("...") of a script (a double-quoted literal without escapes).
template <class F>
void each_script_text(std::string_view js, const F &f) {
    constexpr std::string_view kCall = "t(\"";
    for (std::size_t pos = 0;;) {
        const std::size_t at = js.find(kCall, pos);
        if (at == std::string_view::npos) return;
        pos = at + kCall.size();
        const char before = at == 0 ? ' ' : js[at - 1];
        if ((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') || before == '_' || before == '.' ||
            (before >= '0' && before <= '9')) {
            continue;  // another function whose name ends in t
        }
        const std::size_t end = js.find('"', pos);
        if (end == std::string_view::npos) return;
        f(std::string(js.substr(pos, end - pos)));
        pos = end + 1;
    }
}

// A string in JSON inside a script: nothing HTML would read (< > & as \u escapes, so that the
// catalog stays inert if it is ever written into a page), and no brace.
void append_script_json(std::string &out, std::string_view s) {
    out.push_back('"');
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\' || u < 0x20 || c == '<' || c == '>' || c == '&' || c == '{' || c == '}') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", u);
            out += buf;
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
}

// The scripts' catalog of language `lang`: "globalThis.signinCatalog={...};" with every string of
// every page's scripts that the language translates, or "" when it translates none.
std::string catalog_script(const i18n::Languages &langs, std::size_t lang) {
    std::string json;
    std::set<std::string> written;
    // every page's scripts: one catalog serves them all (a script shared by pages is read once
    // per page, its strings written once)
    for (Page p : kPages) {
        for (std::string_view script : scripts_of(p)) {
            const EmbeddedFile *js = embedded(script);
            if (js == nullptr) continue;
            each_script_text(js->body, [&](const std::string &id) {
                if (!langs.translates(lang, id) || !written.insert(id).second) return;
                json += json.empty() ? "{" : ",";
                append_script_json(json, id);
                json += ":";
                append_script_json(json, langs.text(lang, id));
            });
        }
    }
    if (json.empty()) return {};
    return "globalThis.signinCatalog=" + json + "};\n";
}

// The first 12 hex digits of the SHA-256 of `body`, as the embedded files' hashes are written.
std::string content_hash(std::string_view body) {
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char *>(body.data()), body.size());
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < 6; i++) {
        out.push_back(kHex[digest[i] >> 4]);
        out.push_back(kHex[digest[i] & 15]);
    }
    return out;
}

// The template of `page` in language `lang`: its texts translated, its lang, dir, the link to its
// scripts' catalog (none when catalog_hash is empty) and the picker.
std::string localize(Page page, const i18n::Languages &langs, std::size_t lang, const Settings &fixed,
                     std::string_view catalog_hash = {}) {
    const EmbeddedFile *f = embedded(template_name(page));
    if (f == nullptr) return {};
    const std::vector<i18n::Arg> args = {
        i18n::text_arg("site", "{{site_name}}"),
        i18n::text_arg("account", "{{account}}"),
        i18n::number_arg("minutes", static_cast<double>(fixed.token_minutes)),
        i18n::number_arg("fresh", static_cast<double>(fixed.fresh_minutes)),
        i18n::number_arg("days", static_cast<double>(fixed.remember_days)),
    };
    std::string out;
    std::string_view t = f->body;
    for (std::size_t pos = 0;;) {
        const std::size_t open = t.find(kOpen, pos);
        const std::size_t close = open == std::string_view::npos ? open : t.find(kClose, open + kOpen.size());
        if (close == std::string_view::npos) {
            out.append(t.substr(pos));
            break;
        }
        out.append(t.substr(pos, open - pos));
        out += langs.format(lang, folded(t.substr(open + kOpen.size(), close - open - kOpen.size())), args);
        pos = close + kClose.size();
    }
    auto replace = [&out](std::string_view name, const std::string &value) {
        for (std::size_t at = out.find(name); at != std::string::npos; at = out.find(name, at + value.size())) {
            out.replace(at, name.size(), value);
        }
    };
    replace("{{lang}}", escaped(langs.tag(lang)));
    replace("{{dir}}", langs.rtl(lang) ? "rtl" : "ltr");
    // the scripts' catalog, before the page's module scripts (a deferred classic script runs first)
    std::string link;
    if (!catalog_hash.empty() && page != Page::Unavailable) {
        link = "<script src=\"" + std::string(page == Page::Forbidden ? "{{assets}}" : page == Page::Admin ? "../assets/" : "assets/") + "i18n-" +
               escaped(langs.tag(lang)) + ".js?v=" + std::string(catalog_hash) + "\" defer></script>";
    }
    replace("{{i18n}}", link);
    std::string picker;
    if (langs.size() > 1 && page != Page::Unavailable) {  // the picker needs the pages' script
        picker = "<footer class=\"languages\"><label for=\"signin-language\">" +
                 langs.format(lang, "Language") + "</label>\n<select id=\"signin-language\">";
        for (std::size_t i = 0; i < langs.size(); i++) {
            picker += "<option value=\"" + escaped(langs.tag(i)) + "\" lang=\"" + escaped(langs.tag(i)) + "\"" +
                      (i == lang ? " selected" : "") + ">" + escaped(langs.native_name(i)) + "</option>";
        }
        picker += "</select></footer>";
    }
    replace("{{picker}}", picker);
    return out;
}

std::string expand_page(std::string_view t, const Settings &settings) {
    std::string out;
    out.reserve(t.size() + 256);
    expand(
        t, [&](std::string_view name, std::string &o) { return value_of(name, settings, o); },
        [](std::string_view) { return false; }, out);
    return out;
}


}  // namespace

std::string render(Page page, const Settings &settings) {
    return expand_page(localize(page, *i18n::Languages::english(), 0, settings), settings);
}

Localized::Localized(std::shared_ptr<const i18n::Languages> languages, const Settings &fixed)
    : languages_(std::move(languages)) {
    templates_.resize(languages_->size());
    catalogs_.resize(languages_->size());
    for (std::size_t lang = 0; lang < languages_->size(); lang++) {
        Catalog &c = catalogs_[lang];
        c.body = catalog_script(*languages_, lang);
        if (!c.body.empty()) {
            c.name = "i18n-" + languages_->tag(lang) + ".js";
            c.hash = content_hash(c.body);
        }
        for (Page p : kPages) {
            templates_[lang][static_cast<std::size_t>(p)] = localize(p, *languages_, lang, fixed, c.hash);
        }
    }
}

std::optional<Asset> Localized::catalog(std::string_view name) const {
    for (const Catalog &c : catalogs_) {
        if (!c.body.empty() && c.name == name) return Asset{c.name, "text/javascript; charset=utf-8", c.body, c.hash};
    }
    return std::nullopt;
}

std::string Localized::render(Page page, std::size_t lang, const Settings &settings) const {
    if (lang >= templates_.size()) lang = 0;
    return expand_page(templates_[lang][static_cast<std::size_t>(page)], settings);
}

std::vector<std::string> messages() {
    std::vector<std::string> out;
    auto add = [&out](const std::string &id) {
        if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    };
    for (Page p : kPages) {
        if (const EmbeddedFile *f = embedded(template_name(p))) each_text(f->body, add);
        for (std::string_view script : scripts_of(p)) {
            if (const EmbeddedFile *js = embedded(script)) each_script_text(js->body, add);
        }
    }
    add("Language");
    return out;
}

std::string content_security_policy(std::string_view login_url) {
    std::string csp(content_security_policy());
    const std::string_view origin = url_origin(login_url);
    if (origin.empty() || origin.find_first_of(" ;,'\"") != std::string_view::npos) return csp;
    for (std::string_view directive : {"script-src 'self'", "style-src 'self'"}) {
        const auto at = csp.find(directive);
        csp.insert(at + directive.size(), " " + std::string(origin));
    }
    return csp;
}

// ---------------------------------------------------------------- the dev mailbox

namespace {

// The parts of a time the page shows: "2024-05-01", "12:34:56" and ".789".
struct When {
    std::string date, time, millis;
};
When when(long long ms) {
    std::time_t sec = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&sec, &tm);
    char date[32], hms[32], millis[8];
    std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    std::strftime(hms, sizeof hms, "%H:%M:%S", &tm);
    std::snprintf(millis, sizeof millis, ".%03d", static_cast<int>(ms % 1000));
    return {date, hms, millis};
}

bool web_link(std::string_view link) { return link.substr(0, 7) == "http://" || link.substr(0, 8) == "https://"; }

bool email_shows(const MailboxEmail &e, bool newest, std::string_view name) {
    if (name == "open") return newest;  // the newest: its code at a glance
    if (name == "purpose") return !e.purpose.empty();
    if (name == "code") return !e.code.empty();
    if (name == "link") return !e.link.empty();
    if (name == "web_link") return web_link(e.link);  // a link only to a web page, never javascript:
    if (name == "html") return e.html;
    if (name == "text") return !e.text.empty();
    return false;
}

bool email_value(const MailboxEmail &e, std::string_view name, std::string &out) {
    const std::string_view subject = e.subject.empty() ? std::string_view("(no subject)") : e.subject;
    if (name == "seq") {
        out += std::to_string(e.seq);
    } else if (name == "subject") {
        append_html_escaped(out, subject);
    } else if (name == "to") {
        append_html_escaped(out, e.email);
    } else if (name == "purpose") {
        append_html_escaped(out, e.purpose);
    } else if (name == "received_at") {
        out += mailbox_time(e.received_ms);
    } else if (name == "time") {
        out += when(e.received_ms).time;
    } else if (name == "date") {
        out += when(e.received_ms).date;
    } else if (name == "code") {
        append_html_escaped(out, e.code);
    } else if (name == "link") {
        append_html_escaped(out, e.link);
    } else if (name == "text") {
        append_html_escaped(out, e.text);
    } else {
        return false;
    }
    return true;
}

}  // namespace

std::string mailbox_time(long long received_ms) {
    const When w = when(received_ms);
    return w.date + "T" + w.time + w.millis + "Z";
}

std::string render_mailbox(const std::vector<MailboxEmail> &emails) {
    const EmbeddedFile *page = embedded("mailbox.html");
    const EmbeddedFile *email = embedded("mailbox_email.html");
    if (page == nullptr || email == nullptr) return {};
    std::string articles;
    for (auto it = emails.rbegin(); it != emails.rend(); ++it) {
        const bool newest = it == emails.rbegin();
        expand(
            email->body, [&](std::string_view name, std::string &o) { return email_value(*it, name, o); },
            [&](std::string_view name) { return email_shows(*it, newest, name); }, articles);
    }
    std::string out;
    expand(
        page->body,
        [&](std::string_view name, std::string &o) {
            if (name != "emails") return false;
            o += articles;
            return true;
        },
        [&](std::string_view name) { return name == "empty" && emails.empty(); }, out);
    return out;
}

// The hash of the page's <style> element: a policy that allowed inline styles in general
// ('unsafe-inline') would also allow a style injected into the page.
const std::string &mailbox_policy() {
    static const std::string policy = [] {
        const EmbeddedFile *page = embedded("mailbox.html");
        std::string_view t = page ? page->body : std::string_view();
        const std::size_t open = t.find("<style>"), close = t.find("</style>");
        if (open == std::string_view::npos || close == std::string_view::npos) {
            throw std::runtime_error("mailbox.html has no <style> element");
        }
        const std::string_view style = t.substr(open + 7, close - open - 7);
        if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
        unsigned char hash[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(hash, reinterpret_cast<const unsigned char *>(style.data()), style.size());
        char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL)];
        sodium_bin2base64(b64, sizeof b64, hash, sizeof hash, sodium_base64_VARIANT_ORIGINAL);
        return "default-src 'none'; style-src 'sha256-" + std::string(b64) +
               "'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
    }();
    return policy;
}

}  // namespace signin::pages
