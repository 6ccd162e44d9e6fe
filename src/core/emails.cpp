// The ready-made emails: built-in templates, custom ones, rendering and previews.
#include "signin/emails.hpp"

#include <algorithm>

namespace signin {
namespace {

// {{password_note}} of a Registration whose request chose a password (its own empty line first)
constexpr std::string_view kPasswordNote =
    "\nA password was chosen when this account was requested. If that was not you, do not use this code: "
    "whoever chose the password could sign in. Ask for a new code on the site.\n";

constexpr std::string_view kHtmlHead =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\"></head>\n"
    "<body style=\"font-family: sans-serif; line-height: 1.5\">\n";
constexpr std::string_view kHtmlFoot = "</body></html>\n";
constexpr std::string_view kHtmlCode =
    "<p style=\"font-family: monospace; font-size: 2em; letter-spacing: 0.1em; white-space: nowrap\">"
    "<strong>{{code}}</strong></p>\n";

std::size_t index_of(Purpose p) { return static_cast<std::size_t>(p) - 1; }

bool carries_code(Purpose p) { return p != Purpose::EmailChanged && p != Purpose::PasswordChanged; }

std::string html_page(std::string_view body) {
    std::string page(kHtmlHead);
    page.append(body);
    page.append(kHtmlFoot);
    return page;
}

// The built-in email of each purpose.
EmailTemplate builtin(Purpose p) {
    const std::string code(kHtmlCode);
    switch (p) {
    case Purpose::SignIn:
        return {"Your sign-in code for {{site_name}}",
                "Use this code to sign in to {{site_name}}:\n\n{{code}}\n\nIt is valid for {{minutes}} minutes and can be "
                "used once. If you did not ask for it, ignore this email.\n",
                html_page("<p>Use this code to sign in to {{site_name}}:</p>\n" + code +
                          "<p>It is valid for {{minutes}} minutes and can be used once. If you did not ask for it, "
                          "ignore this email.</p>\n")};
    case Purpose::Registration:
        return {"Confirm your address for {{site_name}}",
                "Use this code to finish creating your account on {{site_name}}:\n\n{{code}}\n\nIt is valid for "
                "{{minutes}} minutes and can be used once.\n{{password_note}}",
                html_page("<p>Use this code to finish creating your account on {{site_name}}:</p>\n" + code +
                          "<p>It is valid for {{minutes}} minutes and can be used once.</p>\n"
                          "<p>{{password_note}}</p>\n")};
    case Purpose::AlreadyRegistered:
        return {"Your sign-in code for {{site_name}}",
                "Someone tried to register this address, which already has an account on {{site_name}}.\n"
                "Use this code to sign in:\n\n{{code}}\n\nIt is valid for {{minutes}} minutes and can be used once. "
                "If you did not ask for it, ignore this email.\n",
                html_page("<p>Someone tried to register this address, which already has an account on {{site_name}}. "
                          "Use this code to sign in:</p>\n" +
                          code +
                          "<p>It is valid for {{minutes}} minutes and can be used once. If you did not ask for it, "
                          "ignore this email.</p>\n")};
    case Purpose::EmailChange:
        return {"Confirm your new address for {{site_name}}",
                "Use this code to confirm {{email}} as the new address of your account on {{site_name}}:\n\n{{code}}\n\n"
                "It is valid for {{minutes}} minutes. It cannot be used to sign in.\n",
                html_page("<p>Use this code to confirm {{email}} as the new address of your account on "
                          "{{site_name}}:</p>\n" +
                          code + "<p>It is valid for {{minutes}} minutes. It cannot be used to sign in.</p>\n")};
    case Purpose::EmailChangeApproval:
        return {"Approve a change of address for {{site_name}}",
                "Someone asked to move your account on {{site_name}} to a new address. If it was you, approve it with "
                "this code:\n\n{{code}}\n\nIt is valid for {{minutes}} minutes. If it was not you, do not use it.\n",
                html_page("<p>Someone asked to move your account on {{site_name}} to a new address. If it was you, "
                          "approve it with this code:</p>\n" +
                          code + "<p>It is valid for {{minutes}} minutes. If it was not you, do not use it.</p>\n")};
    case Purpose::EmailChanged:
        return {"Your address for {{site_name}} was changed",
                "The address of your account on {{site_name}} was just changed. If this was not you, contact the "
                "site right away.\n",
                html_page("<p>The address of your account on {{site_name}} was just changed. If this was not you, "
                          "contact the site right away.</p>\n")};
    case Purpose::Invitation:
        return {"You are invited to {{site_name}}",
                "You are invited to {{site_name}}. Use this code to sign in:\n\n{{code}}\n\nIt is valid for "
                "{{minutes}} minutes and can be used once. Later, sign in with your address, {{email}}.\n",
                html_page("<p>You are invited to {{site_name}}. Use this code to sign in:</p>\n" + code +
                          "<p>It is valid for {{minutes}} minutes and can be used once. Later, sign in with your "
                          "address, {{email}}.</p>\n")};
    case Purpose::PasswordChanged:
        return {"Your password for {{site_name}} was changed",
                "The password of your account on {{site_name}} was just changed, and every other session was signed "
                "out.\n\nIf this was not you, sign in with an email code and set a new password right away.\n",
                html_page("<p>The password of your account on {{site_name}} was just changed, and every other session "
                          "was signed out.</p>\n<p>If this was not you, sign in with an email code and set a new "
                          "password right away.</p>\n")};
    }
    return {};
}

struct Values {
    std::string_view token, email, origin, minutes, password_note, code, site_name;
};

std::optional<std::string_view> value_of(const Values &v, std::string_view name) {
    if (name == "token") return v.token;
    if (name == "email") return v.email;
    if (name == "origin") return v.origin;
    if (name == "minutes") return v.minutes;
    if (name == "password_note") return v.password_note;
    if (name == "code") return v.code;
    if (name == "site_name") return v.site_name;
    return std::nullopt;
}

// Replaces every {{name}} of tpl; an unknown or unclosed name is an error. `used` collects names.
Result<std::string> expand(std::string_view tpl, const Values &v, bool html, std::vector<std::string> *used = nullptr) {
    std::string out;
    out.reserve(tpl.size() + 64);
    std::size_t at = 0;
    for (;;) {
        std::size_t open = tpl.find("{{", at);
        if (open == std::string_view::npos) break;
        std::size_t close = tpl.find("}}", open + 2);
        if (close == std::string_view::npos) return Error{Code::InvalidRequest, "a \"{{\" is never closed"};
        out.append(tpl.substr(at, open - at));
        std::string_view name = tpl.substr(open + 2, close - open - 2);
        while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
        while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
        auto value = value_of(v, name);
        if (!value) {
            return Error{Code::InvalidRequest,
                         "unknown \"{{" + std::string(name) +
                             "}}\" (known: token, email, origin, minutes, password_note)"};
        }
        if (used) used->emplace_back(name);
        if (html) {
            append_html_escaped(out, *value);
        } else {
            out.append(*value);
        }
        at = close + 2;
    }
    out.append(tpl.substr(at));
    return out;
}

bool uses(const std::vector<std::string> &names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The plain text as an HTML body: escaped, in <pre>.
std::string html_from_text(std::string_view text) {
    std::string body = "<pre style=\"font-family: sans-serif; white-space: pre-wrap\">";
    append_html_escaped(body, text);
    body += "</pre>\n";
    return html_page(body);
}

}  // namespace

void append_html_escaped(std::string &out, std::string_view s) {
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out.push_back(c);
        }
    }
}

const std::array<Purpose, 8> &all_purposes() {
    static const std::array<Purpose, 8> all = {Purpose::SignIn,          Purpose::Registration,
                                               Purpose::AlreadyRegistered, Purpose::EmailChange,
                                               Purpose::EmailChangeApproval, Purpose::EmailChanged,
                                               Purpose::PasswordChanged, Purpose::Invitation};
    return all;
}

std::optional<Purpose> purpose_from_text(std::string_view text) {
    if (text.substr(0, 5) == "auth.") text.remove_prefix(5);
    for (Purpose p : all_purposes()) {
        if (text == purpose_name(p) || text == purpose_tag(p)) return p;
    }
    return std::nullopt;
}

Emails::Emails(Millis token_ttl) : token_ttl_(token_ttl) {
    for (Purpose p : all_purposes()) templates_[index_of(p)] = builtin(p);
}

Result<EmailTemplate> Emails::parse(Purpose purpose, std::string_view file, std::string_view html) {
    constexpr std::string_view kSubject = "Subject:";
    std::size_t eol = file.find('\n');
    std::string_view first = file.substr(0, eol);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    if (first.substr(0, kSubject.size()) != kSubject) {
        return Error{Code::InvalidRequest, "the first line must be \"Subject: ...\""};
    }
    std::string_view subject = first.substr(kSubject.size());
    while (!subject.empty() && subject.front() == ' ') subject.remove_prefix(1);
    std::string_view rest = eol == std::string_view::npos ? std::string_view() : file.substr(eol + 1);
    if (rest.substr(0, 1) == "\n") {
        rest.remove_prefix(1);
    } else if (rest.substr(0, 2) == "\r\n") {
        rest.remove_prefix(2);
    } else {
        return Error{Code::InvalidRequest, "an empty line must follow the Subject line"};
    }
    EmailTemplate t{std::string(subject), std::string(rest), std::string(html)};
    Status ok = check(purpose, t);
    if (!ok) return ok.error();
    return t;
}

Status Emails::check(Purpose purpose, const EmailTemplate &t) {
    const std::string name(purpose_name(purpose));
    if (t.subject.empty() || t.subject.find_first_of("\r\n") != std::string::npos) {
        return Error{Code::InvalidRequest, name + ": the subject must be one line, not empty"};
    }
    const Values probe{"t", "e", "o", "1", "n", "c", "s"};
    std::vector<std::string> in_subject, in_text, in_html;
    auto s = expand(t.subject, probe, false, &in_subject);
    if (!s) return Error{Code::InvalidRequest, name + " subject: " + s.error().message};
    auto x = expand(t.text, probe, false, &in_text);
    if (!x) return Error{Code::InvalidRequest, name + " text: " + x.error().message};
    auto h = expand(t.html, probe, true, &in_html);
    if (!h) return Error{Code::InvalidRequest, name + " html: " + h.error().message};
    auto shows_code = [](const std::vector<std::string> &names) { return uses(names, "token") || uses(names, "code"); };
    if (shows_code(in_subject)) {
        return Error{Code::InvalidRequest,
                     name + ": the subject must not show the code (subjects show on lock screens and in mail logs)"};
    }
    if (carries_code(purpose)) {
        if (!shows_code(in_text)) return Error{Code::InvalidRequest, name + ": the text must show {{code}} or {{token}}"};
        if (!t.html.empty() && !shows_code(in_html)) {
            return Error{Code::InvalidRequest, name + ": the html must show {{code}} or {{token}}"};
        }
    } else if (shows_code(in_text) || shows_code(in_html)) {
        return Error{Code::InvalidRequest, name + " is a notice: it has no {{code}} or {{token}} to show"};
    }
    return ok_status();
}

Status Emails::replace(Purpose purpose, EmailTemplate t) {
    Status ok = check(purpose, t);
    if (!ok) return ok;
    templates_[index_of(purpose)] = std::move(t);
    custom_[index_of(purpose)] = true;
    return ok_status();
}

bool Emails::is_custom(Purpose purpose) const { return custom_[index_of(purpose)]; }

Email Emails::render(const Delivery &d, std::string_view origin) const {
    const EmailTemplate &t = templates_[index_of(d.purpose)];
    const std::string minutes = std::to_string(std::max<Millis>(1, (token_ttl_ + 59999) / 60000));
    // the site's name: signin_site_name, or the origin without its scheme
    std::string_view site = site_name_;
    if (site.empty()) {
        site = origin;
        if (auto colon = site.find("://"); colon != std::string_view::npos) site.remove_prefix(colon + 3);
    }
    Values v{d.token.reveal(), d.email, origin, minutes,
             d.purpose == Purpose::Registration && d.with_password ? kPasswordNote : std::string_view(), d.code, site};
    Email e;
    e.purpose = d.purpose;
    e.tag = "auth." + std::string(purpose_tag(d.purpose));
    // every template was checked by replace() or is built in: expansion cannot fail
    e.subject = expand(t.subject, v, false).value();
    e.text = expand(t.text, v, false).value();
    e.html = t.html.empty() ? html_from_text(e.text) : expand(t.html, v, true).value();
    return e;
}

Email Emails::preview(Purpose purpose, std::string_view origin) const {
    Delivery d;
    d.email = std::string(kPreviewEmail);
    d.purpose = purpose;
    if (carries_code(purpose)) {
        d.token = Secret(std::string(kPreviewToken));
        d.code = std::string(kPreviewCode);
    }
    d.with_password = purpose == Purpose::Registration;
    return render(d, origin);
}

std::vector<Email> Emails::previews(std::string_view origin) const {
    std::vector<Email> out;
    for (Purpose p : all_purposes()) out.push_back(preview(p, origin));
    return out;
}

}  // namespace signin
