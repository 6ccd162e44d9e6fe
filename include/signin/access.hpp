// Who may pass a gate, and who may join (signin_allow, signin_deny): rules evaluated in order,
// first match wins, like nginx's allow/deny; lists of people read from a file; roles. Valid C++17:
// the glue includes it.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "signin/types.hpp"

namespace signin {

// Whether a return_to (the page signin_login_url sends a browser back to), once decoded, is a
// path of this site that a page may send the browser to: "/x...", never "//host", "/\\host"
// (browsers read "\\" as "/"), a scheme, or a control character, space or backslash anywhere.
bool is_same_origin_path(std::string_view path);

// A role name: [a-z0-9_-]{1,32}, or nullopt.
std::optional<std::string> normalize_role(std::string_view role);

// Addresses and whole domains: one address or "@domain" a line, '#' starts a comment. Addresses
// are normalized as sign-in normalizes them; domains are lowercase.
class People {
public:
    // nullopt with `why` ("line 3: ...") when a line is neither.
    static std::optional<People> parse(std::string_view text, std::string *why);
    bool contains(std::string_view normalized_email) const;
    std::size_t size() const { return emails_.size() + domains_.size(); }
    void add_email(std::string normalized) { emails_.insert(std::move(normalized)); }
    void add_domain(std::string lowercase) { domains_.insert(std::move(lowercase)); }
    // Everyone of `other` too.
    void add(const People &other) {
        emails_.insert(other.emails_.begin(), other.emails_.end());
        domains_.insert(other.domains_.begin(), other.domains_.end());
    }

private:
    std::set<std::string, std::less<>> emails_;
    std::set<std::string, std::less<>> domains_;
};

// The domain of a normalized address ("" when it has none).
std::string_view email_domain(std::string_view normalized_email);

struct AccessRule {
    enum class Kind { Email, Domain, Role, People, All };
    bool allow = true;
    Kind kind = Kind::All;
    std::string value;                       // Email (normalized), Domain (lowercase), Role
    std::shared_ptr<const People> people;    // People
    bool matches(const User &u) const;
};

// signin_allow / signin_deny of one level, in order.
class AccessRules {
public:
    // One rule from its directive's words: ("email", "alice@acme.com"), ("all"), ("file", <text>)...
    // The file's text is given (the caller reads it); `what` names it in errors.
    static Result<AccessRule> rule(bool allow, std::string_view form, std::string_view value,
                                   std::string_view file_text = {});
    void add(AccessRule r) { rules_.push_back(std::move(r)); }
    bool empty() const { return rules_.empty(); }

    // First match wins; a list that ends without a match denies when it holds any allow rule
    // (an allow list), and allows otherwise (a deny list).
    bool allows(const User &u) const;

private:
    std::vector<AccessRule> rules_;
};

}  // namespace signin
