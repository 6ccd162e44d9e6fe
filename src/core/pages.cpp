// The ready-made browser pages (signin/pages.hpp): templates and assets embedded from src/pages.
#include "signin/pages.hpp"

#include <array>
#include <vector>

#include "encoding.hpp"
#include "pages_data.hpp"
#include "signin/emails.hpp"

namespace signin::pages {
namespace {

using pages_data::EmbeddedFile;

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

std::string minutes(long long n) { return n == 1 ? "1 minute" : std::to_string(n) + " minutes"; }

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
    } else if (name == "token_validity") {
        out += minutes(s.token_minutes);
    } else if (name == "fresh_validity") {
        out += minutes(s.fresh_minutes);
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

std::string render(Page page, const Settings &settings) {
    const EmbeddedFile *f = embedded(page == Page::SignIn      ? "signin.html"
                                     : page == Page::Account   ? "account.html"
                                     : page == Page::Forbidden ? "forbidden.html"
                                                               : "unavailable.html");
    if (f == nullptr) return {};
    std::string out;
    out.reserve(f->body.size() + 256);
    std::string_view t = f->body;
    for (std::size_t pos = 0;;) {
        const std::size_t open = t.find("{{", pos);
        if (open == std::string_view::npos) {
            out.append(t.substr(pos));
            break;
        }
        const std::size_t close = t.find("}}", open + 2);
        out.append(t.substr(pos, open - pos));
        if (close == std::string_view::npos || !value_of(t.substr(open + 2, close - open - 2), settings, out)) {
            // a template mistake shows up in the unit tests (no "{{" is left in a rendered page)
            out.append(t.substr(open, 2));
            pos = open + 2;
            continue;
        }
        pos = close + 2;
    }
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

}  // namespace signin::pages
