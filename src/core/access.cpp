// Access rules, people lists and roles (access.hpp).
#include "signin/access.hpp"

#include <algorithm>

#include "signin/engine.hpp"
#include "text.hpp"

namespace signin {

bool is_same_origin_path(std::string_view path) {
    if (path.empty() || path.size() > 2048 || path[0] != '/') return false;
    if (path.size() > 1 && (path[1] == '/' || path[1] == '\\')) return false;
    for (char c : path) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7f || c == '\\') return false;
    }
    return true;
}

std::optional<std::string> normalize_role(std::string_view role) {
    if (role.empty() || role.size() > 32) return std::nullopt;
    std::string out;
    for (char c : role) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return std::nullopt;
        out.push_back(c);
    }
    return out;
}

std::string_view email_domain(std::string_view email) {
    auto at = email.rfind('@');
    return at == std::string_view::npos ? std::string_view() : email.substr(at + 1);
}

namespace {

// a line of a people file may end in CRLF
std::string_view trim(std::string_view s) { return text::trim(s, " \t\r"); }

// A domain as "@domain" in a people list or `signin_allow domain`: checked as the domain of an
// address would be.
std::optional<std::string> normalize_domain(std::string_view domain) {
    if (domain.empty()) return std::nullopt;
    auto e = normalize_email("x@" + std::string(domain));
    if (!e) return std::nullopt;
    return std::string(email_domain(*e));
}

}  // namespace

std::optional<People> People::parse(std::string_view text, std::string *why) {
    People p;
    std::size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        if (line.front() == '@') {
            auto d = normalize_domain(line.substr(1));
            if (!d) {
                if (why) *why = "line " + std::to_string(line_no) + ": \"" + std::string(line) + "\" is not a domain";
                return std::nullopt;
            }
            p.add_domain(*d);
            continue;
        }
        auto e = normalize_email(line);
        if (!e) {
            if (why)
                *why = "line " + std::to_string(line_no) + ": \"" + std::string(line) +
                       "\" is neither an address nor @domain";
            return std::nullopt;
        }
        p.add_email(*e);
    }
    return p;
}

bool People::contains(std::string_view email) const {
    if (emails_.find(email) != emails_.end()) return true;
    auto d = email_domain(email);
    return !d.empty() && domains_.find(d) != domains_.end();
}

bool AccessRule::matches(const User &u) const {
    switch (kind) {
    case Kind::All: return true;
    case Kind::Email: return u.email == value;
    case Kind::Domain: return email_domain(u.email) == value;
    case Kind::Role: return std::find(u.roles.begin(), u.roles.end(), value) != u.roles.end();
    case Kind::People: return people && people->contains(u.email);
    }
    return false;
}

Result<AccessRule> AccessRules::rule(bool allow, std::string_view form, std::string_view value,
                                     std::string_view file_text) {
    AccessRule r;
    r.allow = allow;
    if (form == "all") {
        if (!value.empty()) return Error{Code::InvalidRequest, "\"all\" takes no value"};
        r.kind = AccessRule::Kind::All;
        return r;
    }
    if (value.empty()) return Error{Code::InvalidRequest, "\"" + std::string(form) + "\" needs a value"};
    if (form == "email") {
        auto e = normalize_email(value);
        if (!e) return Error{Code::InvalidEmail, "\"" + std::string(value) + "\" is not an email address"};
        r.kind = AccessRule::Kind::Email;
        r.value = *e;
    } else if (form == "domain") {
        auto d = normalize_domain(value.front() == '@' ? value.substr(1) : value);
        if (!d) return Error{Code::InvalidRequest, "\"" + std::string(value) + "\" is not a domain"};
        r.kind = AccessRule::Kind::Domain;
        r.value = *d;
    } else if (form == "role") {
        auto role = normalize_role(value);
        if (!role) return Error{Code::InvalidRequest, "\"" + std::string(value) + "\" is not a role ([a-z0-9_-]{1,32})"};
        r.kind = AccessRule::Kind::Role;
        r.value = *role;
    } else if (form == "file") {
        std::string why;
        auto people = People::parse(file_text, &why);
        if (!people) return Error{Code::InvalidRequest, std::string(value) + ": " + why};
        r.kind = AccessRule::Kind::People;
        r.value = std::string(value);
        r.people = std::make_shared<const People>(std::move(*people));
    } else {
        return Error{Code::InvalidRequest,
                     "unknown form \"" + std::string(form) + "\" (email, domain, role, file or all)"};
    }
    return r;
}

bool AccessRules::allows(const User &u) const {
    bool any_allow = false;
    for (const auto &r : rules_) {
        if (r.matches(u)) return r.allow;
        any_allow = any_allow || r.allow;
    }
    return !any_allow;
}

}  // namespace signin
