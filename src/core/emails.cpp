// The ready-made emails: built-in templates, custom ones, rendering and previews.
#include "signin/emails.hpp"

#include <algorithm>

namespace signin {
namespace {

// {{password_note}} of a Registration whose request chose a password (its own empty line first)
constexpr std::string_view kPasswordNote =
    "A password was chosen when this account was requested. If that was not you, do not use this code: "
    "whoever chose the password could sign in. Ask for a new code on the site.";
// {{validity}}: how long a code stays valid, {minutes} in words
constexpr std::string_view kValidity = "{minutes, plural, one {# minute} other {# minutes}}";
constexpr std::string_view kOpenLink = "Or open this link: {link}";
// {{device}} of a NewSignIn: what is known of the browser and its system
constexpr std::string_view kBrowserOnSystem = "{browser} on {system}";
constexpr std::string_view kBrowserOnlySystem = "a browser on {system}";
constexpr std::string_view kUnknownBrowser = "an unknown browser or app";

// The layout of every built-in HTML email. Mail clients keep little of the web: Gmail drops
// <style> in many of its apps and Outlook for Windows lays out with Word, so the column is made of
// tables (align, width and bgcolor attributes for Word, inline styles for the rest), one column at
// most 480 px wide that takes the whole width of a phone, with nothing fetched from elsewhere (no
// image, no web font: many clients block them, and a fetch tells the sender the email was opened).
constexpr std::string_view kFont =
    "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif";
// html_page's pieces, around the site's name (twice) and the body
constexpr std::string_view kHtmlLang = "<!doctype html>\n<html lang=\"";
constexpr std::string_view kHtmlTitle =
    "><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>";
constexpr std::string_view kHtmlColumn =
    "</title></head>\n"
    "<body style=\"margin:0;padding:0;background-color:#f4f4f5\">\n"
    "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" "
    "bgcolor=\"#f4f4f5\" style=\"width:100%;background-color:#f4f4f5\"><tr>\n"
    "<td align=\"center\" style=\"padding:24px 12px\">\n"
    "<table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" bgcolor=\"#ffffff\" "
    "style=\"width:100%;max-width:480px;background-color:#ffffff;border:1px solid #e4e4e7;border-radius:8px\"><tr>\n"
    "<td style=\"padding:28px 24px;font-size:16px;line-height:1.5;color:#18181b;text-align:";
constexpr std::string_view kHtmlHeading = "\">\n<p style=\"margin:0 0 20px;font-size:14px;font-weight:bold;color:#52525b\">";
constexpr std::string_view kHtmlFoot = "</td></tr></table>\n</td></tr></table>\n</body></html>\n";
constexpr std::string_view kParagraph = "<p style=\"margin:0 0 16px\">";
// The code: large, in a monospace font whose 0 and O differ, on one line, and selected whole by
// one click or tap where the client honours user-select.
constexpr std::string_view kHtmlCode =
    "<p style=\"margin:0 0 24px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'Courier New',monospace;"
    "font-size:30px;font-weight:bold;letter-spacing:4px;white-space:nowrap;color:#18181b;"
    "-webkit-user-select:all;user-select:all\">{{code}}</p>\n";
// The link as a button: an <a> in a coloured cell, so the whole button is a link where padding on
// an <a> is ignored (Outlook), and a plain link where tables are flattened.
constexpr std::string_view kHtmlButtonHead =
    "<table role=\"presentation\" cellpadding=\"0\" cellspacing=\"0\" border=\"0\" style=\"margin:0 0 24px\"><tr>\n"
    "<td align=\"center\" bgcolor=\"#1d4ed8\" style=\"border-radius:6px;background-color:#1d4ed8\">"
    "<a href=\"{{link}}\" style=\"display:inline-block;padding:12px 24px;font-size:16px;"
    "font-weight:bold;line-height:1.25;color:#ffffff;text-decoration:none;border-radius:6px;";
constexpr std::string_view kHtmlButtonFoot = "</a></td>\n</tr></table>\n";

std::size_t index_of(Purpose p) { return static_cast<std::size_t>(p) - 1; }

bool carries_code(Purpose p) {
    return p != Purpose::EmailChanged && p != Purpose::PasswordChanged && p != Purpose::MfaLocked &&
           p != Purpose::NewSignIn;
}

// The language an email is written in: its tag, and whether it reads right to left.
struct Lang {
    std::string_view tag = "en";
    bool rtl = false;
};

// The layout around `body`; `site`: the site's name as HTML ({{site_name}} in a template).
std::string html_page(std::string_view body, std::string_view site, const Lang &lang) {
    std::string page(kHtmlLang);
    append_html_escaped(page, lang.tag);
    page.append(lang.rtl ? "\" dir=\"rtl\"" : "\"");
    page.append(kHtmlTitle).append(site).append(kHtmlColumn).append(lang.rtl ? "right;" : "left;");
    page.append(kFont).append(kHtmlHeading).append(site).append("</p>\n");
    page.append(body);
    page.append(kHtmlFoot);
    return page;
}

// What one built-in email says, in plain text: paragraphs before the code (the last introduces
// it), paragraphs after it, the label of the link's button (in the purposes whose token signs
// in, and the account page of NewSignIn), and a note that is appended as it is (its value brings
// its own line breaks). The plain text shows the link on a line of its own: link_line, or "Or open
// this link" after a code.
struct Copy {
    std::string_view subject;
    std::vector<std::string_view> before, after;
    std::string_view button;
    std::string_view note;
    std::string_view link_line = kOpenLink;
};

// The words of one language: a text of the built-in emails translated, with the template's
// names ({{site_name}}, {{email}}, {{validity}}, {{link}}) where the message has its arguments.
class Words {
public:
    Words(const i18n::Languages &langs, std::size_t lang) : langs_(langs), lang_(lang) {}
    std::string operator()(std::string_view english) const {
        static const std::vector<i18n::Arg> args = {
            i18n::text_arg("site", "{{site_name}}"),   i18n::text_arg("email", "{{email}}"),
            i18n::text_arg("validity", "{{validity}}"), i18n::text_arg("link", "{{link}}"),
            i18n::text_arg("when", "{{when}}"),         i18n::text_arg("device", "{{device}}"),
            i18n::text_arg("client", "{{client}}")};
        return langs_.format(lang_, english, args);
    }
    Lang lang() const { return {langs_.tag(lang_), langs_.rtl(lang_)}; }

private:
    const i18n::Languages &langs_;
    std::size_t lang_;
};

EmailTemplate from_copy(Purpose p, const Copy &c, bool linked, const Words &words) {
    EmailTemplate t;
    t.subject = words(c.subject);
    std::string body;
    auto paragraphs = [&](const std::vector<std::string_view> &list) {
        for (std::string_view english : list) {
            const std::string para = words(english);
            if (!t.text.empty()) t.text += "\n";
            t.text.append(para).append("\n");
            body.append(kParagraph).append(para).append("</p>\n");
        }
    };
    paragraphs(c.before);
    if (carries_code(p)) {
        t.text += "\n{{code}}\n";
        body += kHtmlCode;
    }
    if (linked && !c.button.empty()) {
        t.text += "\n" + words(c.link_line) + "\n";
        body.append(kHtmlButtonHead).append(kFont).append("\">").append(words(c.button)).append(kHtmlButtonFoot);
    }
    paragraphs(c.after);
    if (!c.note.empty()) {
        t.text += c.note;
        body.append("<p style=\"margin:0;color:#9a3412\">").append(c.note).append("</p>\n");
    }
    t.html = html_page(body, "{{site_name}}", words.lang());
    return t;
}

// What each purpose's built-in email says (in English: the msgids of the catalogs).
Copy copy_of(Purpose p) {
    constexpr std::string_view kOnceIgnore =
        "It is valid for {validity} and can be used once. If you did not ask for it, ignore this email.";
    Copy c;
    switch (p) {
    case Purpose::SignIn:
        c = {"Your sign-in code for {site}", {"Use this code to sign in to {site}:"}, {kOnceIgnore},
             "Sign in to {site}", {}};
        break;
    case Purpose::Registration:
        c = {"Confirm your address for {site}",
             {"Use this code to finish creating your account on {site}:"}, {kOnceIgnore}, "Create your account",
             "{{password_note}}"};
        break;
    case Purpose::AlreadyRegistered:
        // it answers whoever asked to sign in through a page that uses /register (which signs
        // existing accounts in): every returning visitor of such a site gets it, so it is the
        // plain sign-in email
        c = {"Your sign-in code for {site}",
             {"Use this code to sign in to {site}:"},
             {kOnceIgnore},
             "Sign in to {site}",
             {}};
        break;
    case Purpose::EmailChange:
        c = {"Confirm your new address for {site}",
             {"Use this code to confirm {email} as the new address of your account on {site}:"},
             {"It is valid for {validity}. It cannot be used to sign in."},
             "Confirm the new address",
             {}};
        break;
    case Purpose::EmailChangeApproval:
        c = {"Approve a change of address for {site}",
             {"Someone asked to move your account on {site} to a new address. If it was you, approve it "
              "with this code:"},
             {"It is valid for {validity}. If it was not you, do not use it."},
             "Approve the change",
             {}};
        break;
    case Purpose::EmailChanged:
        c = {"Your address for {site} was changed",
             {},
             {"The address of your account on {site} was just changed. If this was not you, contact the "
              "site right away."},
             {},
             {}};
        break;
    case Purpose::Invitation:
        c = {"You are invited to {site}",
             {"You are invited to {site}. Use this code to sign in:"},
             {"It is valid for {validity} and can be used once. Later, sign in with your address, "
              "{email}."},
             "Join {site}",
             {}};
        break;
    case Purpose::PasswordChanged:
        c = {"Your password for {site} was changed",
             {},
             {"The password of your account on {site} was just changed, and every other session was "
              "signed out.",
              "If this was not you, sign in with an email code and set a new password right away."},
             {},
             {}};
        break;
    case Purpose::MfaLocked:
        // whoever typed the codes got past the first step, often with the password: the person is
        // told what that may mean as well as how to get back in
        c = {"The second factor of your {site} account was locked",
             {},
             {"Too many wrong second-factor codes were entered in a row for your account on {site}, so "
              "its second factor was locked: no code is accepted for now.",
              "To sign in, sign in with an email code again, which opens it, or ask the site's administrator to "
              "reset it.",
              "If this was not you, someone may know your password: change it after signing in."},
             {},
             {}};
        break;
    case Purpose::NewSignIn:
        // never for an account's first sign-in: whoever reads it has signed in before, and is told
        // what to do if it was not them
        c = {"New sign-in to your account on {site}",
             {"Your account on {site} was just signed in to from a browser or app that had not been used for "
              "it before.",
              "When: {when}", "Browser: {device}", "IP address: {client}"},
             {"If this was you, there is nothing to do. If it was not, someone knows your password or can read "
              "your email: sign in with an email code, end that session on your account page, and change your "
              "password."},
             "Review your sessions",
             {},
             "See where your account is signed in: {link}"};
        break;
    }
    return c;
}

// The built-in email of each purpose; `linked`: with the link (its button, and a line in the text).
EmailTemplate builtin(Purpose p, bool linked, const Words &words) { return from_copy(p, copy_of(p), linked, words); }

struct Values {
    std::string_view token, email, origin, minutes, password_note, code, site_name, link;
    std::string_view validity;  // "1 minute", "10 minutes": {{minutes}} in words, singular or plural
    std::string_view when, device, client;  // a NewSignIn's facts
};

std::optional<std::string_view> value_of(const Values &v, std::string_view name) {
    if (name == "token") return v.token;
    if (name == "email") return v.email;
    if (name == "origin") return v.origin;
    if (name == "minutes") return v.minutes;
    if (name == "validity") return v.validity;
    if (name == "password_note") return v.password_note;
    if (name == "code") return v.code;
    if (name == "site_name") return v.site_name;
    if (name == "link") return v.link;
    if (name == "when") return v.when;
    if (name == "device") return v.device;
    if (name == "client") return v.client;
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
                             "}}\" (known: code, token, link, site_name, email, origin, minutes, validity, "
                             "password_note, when, device, client)"};
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

// The plain text as an HTML body: escaped, in <pre>, in the built-in layout.
std::string html_from_text(std::string_view text, std::string_view site, const Lang &lang) {
    std::string body = "<pre style=\"margin:0;white-space:pre-wrap;overflow-wrap:anywhere;";
    body.append(kFont).append("\">");
    append_html_escaped(body, text);
    body += "</pre>\n";
    std::string escaped_site;
    append_html_escaped(escaped_site, site);
    return html_page(body, escaped_site, lang);
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

const std::array<Purpose, 10> &all_purposes() {
    static const std::array<Purpose, 10> all = {Purpose::SignIn,          Purpose::Registration,
                                                Purpose::AlreadyRegistered, Purpose::EmailChange,
                                                Purpose::EmailChangeApproval, Purpose::EmailChanged,
                                                Purpose::PasswordChanged, Purpose::Invitation,
                                                Purpose::MfaLocked,       Purpose::NewSignIn};
    return all;
}

std::optional<Purpose> purpose_from_text(std::string_view text) {
    if (text.substr(0, 5) == "auth.") text.remove_prefix(5);
    for (Purpose p : all_purposes()) {
        if (text == purpose_name(p) || text == purpose_tag(p)) return p;
    }
    return std::nullopt;
}

Emails::Emails(Millis token_ttl) : languages_(i18n::Languages::english()), token_ttl_(token_ttl) { build(); }

void Emails::set_languages(std::shared_ptr<const i18n::Languages> languages) {
    languages_ = std::move(languages);
    build();
}

void Emails::build() {
    const std::string minutes = std::to_string(std::max<Millis>(1, (token_ttl_ + 59999) / 60000));
    builtin_.assign(languages_->size(), Builtin{});
    for (std::size_t lang = 0; lang < languages_->size(); lang++) {
        const Words words(*languages_, lang);
        Builtin &b = builtin_[lang];
        for (Purpose p : all_purposes()) {
            b.linked[index_of(p)] = builtin(p, true, words);
            b.unlinked[index_of(p)] = builtin(p, false, words);
        }
        b.validity = languages_->format(lang, kValidity, {i18n::number_arg("minutes", std::stod(minutes))});
        b.password_note = "\n" + languages_->format(lang, kPasswordNote) + "\n";
    }
}

std::size_t Emails::lang_index(std::string_view tag) const {
    if (tag.empty()) return 0;
    return languages_->find(tag).value_or(0);
}

std::vector<std::string> Emails::messages() {
    std::vector<std::string> out = {std::string(kPasswordNote),    std::string(kValidity),
                                    std::string(kOpenLink),        std::string(kBrowserOnSystem),
                                    std::string(kBrowserOnlySystem), std::string(kUnknownBrowser)};
    auto add = [&out](std::string_view s) {
        if (!s.empty() && s.find("{{") == std::string_view::npos &&
            std::find(out.begin(), out.end(), s) == out.end()) {
            out.emplace_back(s);
        }
    };
    for (Purpose p : all_purposes()) {
        const Copy c = copy_of(p);
        add(c.subject);
        for (auto para : c.before) add(para);
        for (auto para : c.after) add(para);
        add(c.button);
        add(c.link_line);
    }
    return out;
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
    const Values probe{"t", "e", "o", "1", "n", "c", "s", "l", "1 minute", "w", "d", "a"};
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
    if (uses(in_subject, "link")) {
        return Error{Code::InvalidRequest, name + ": the subject must not show {{link}}: it carries the token "
                                                  "(subjects show on lock screens and in mail logs)"};
    }
    // the link lands on the sign-in page, which spends the token for a session: only tokens that
    // sign in may have one (an email change is confirmed with its code); NewSignIn's is the
    // account page, with no token
    if (!purpose_signs_in(purpose) && purpose != Purpose::EmailChange && purpose != Purpose::EmailChangeApproval &&
        purpose != Purpose::NewSignIn && (uses(in_text, "link") || uses(in_html, "link"))) {
        return Error{Code::InvalidRequest,
                     name + ": {{link}} spends the token, so it is only for the purposes that carry one "
                            "(not the notices but NewSignIn)"};
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

namespace {

std::string lower_tag(std::string_view tag) {
    std::string out(tag);
    for (char &c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

}  // namespace

Status Emails::replace(Purpose purpose, EmailTemplate t, std::string_view lang) {
    Status ok = check(purpose, t);
    if (!ok) return ok;
    Customs &customs = lang.empty() ? custom_ : custom_by_lang_[lower_tag(lang)];
    customs[index_of(purpose)] = std::move(t);
    return ok_status();
}

bool Emails::is_custom(Purpose purpose, std::string_view lang) const {
    if (lang.empty()) return custom_[index_of(purpose)].has_value();
    const auto it = custom_by_lang_.find(lower_tag(lang));
    return it != custom_by_lang_.end() && it->second[index_of(purpose)].has_value();
}

Email Emails::render(const Delivery &d, std::string_view origin) const {
    const std::string minutes = std::to_string(std::max<Millis>(1, (token_ttl_ + 59999) / 60000));
    const std::size_t lang = lang_index(d.lang);
    const Builtin &words = builtin_[lang];
    // the site's name: signin_site_name, or the origin without its scheme
    std::string_view site = site_name_;
    if (site.empty()) {
        site = origin;
        if (auto colon = site.find("://"); colon != std::string_view::npos) site.remove_prefix(colon + 3);
    }
    Email e;
    e.purpose = d.purpose;
    e.tag = "auth." + std::string(purpose_tag(d.purpose));
    // in the fragment, which browsers never send: the token stays out of every server's log
    if (!link_base_.empty() && !d.token.empty() && purpose_signs_in(d.purpose)) {
        e.link = link_base_ + "#token=" + std::string(d.token.reveal());
    } else if (!link_base_.empty() && !d.token.empty() &&
               (d.purpose == Purpose::EmailChange || d.purpose == Purpose::EmailChangeApproval)) {
        // the sign-in page's other landing: it confirms the change (POST /email/confirm) on a click
        e.link = link_base_ + "#confirm=" + std::string(d.token.reveal());
    } else if (!link_base_.empty() && d.purpose == Purpose::NewSignIn) {
        e.link = link_base_ + "account";  // where the person sees and ends their sessions
    }
    // the template: the operator's for this language, else the operator's for every language, else
    // the built-in one of the language (without a link, it has no button and no line for it)
    const std::size_t i = index_of(d.purpose);
    const EmailTemplate *t = nullptr;
    if (!custom_by_lang_.empty()) {
        const auto it = custom_by_lang_.find(lower_tag(languages_->tag(lang)));
        if (it != custom_by_lang_.end() && it->second[i]) t = &*it->second[i];
    }
    if (t == nullptr && custom_[i]) t = &*custom_[i];
    if (t == nullptr) t = e.link.empty() ? &words.unlinked[i] : &words.linked[i];
    std::string when, device;
    if (d.purpose == Purpose::NewSignIn) {
        when = languages_->format_time(lang, d.signed_in_at);
        if (!d.browser.empty() && !d.system.empty()) {
            device = languages_->format(lang, kBrowserOnSystem,
                                        {i18n::text_arg("browser", d.browser), i18n::text_arg("system", d.system)});
        } else if (!d.browser.empty()) {
            device = d.browser;
        } else if (!d.system.empty()) {
            device = languages_->format(lang, kBrowserOnlySystem, {i18n::text_arg("system", d.system)});
        } else {
            device = languages_->format(lang, kUnknownBrowser);
        }
    }
    Values v{d.token.reveal(), d.email, origin, minutes,
             d.purpose == Purpose::Registration && d.with_password ? std::string_view(words.password_note)
                                                                    : std::string_view(),
             d.code, site, e.link, words.validity, when, device, d.client};
    // every template was checked by replace() or is built in: expansion cannot fail
    e.subject = expand(t->subject, v, false).value();
    e.text = expand(t->text, v, false).value();
    e.html = t->html.empty() ? html_from_text(e.text, site, Lang{languages_->tag(lang), languages_->rtl(lang)})
                             : expand(t->html, v, true).value();
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
    if (purpose == Purpose::NewSignIn) {
        d.signed_in_at = kPreviewTime;
        d.browser = "Firefox 128";
        d.system = "Windows";
        d.client = "203.0.113.7";  // an address kept for documentation (RFC 5737)
    }
    return render(d, origin);
}

std::vector<Email> Emails::previews(std::string_view origin) const {
    std::vector<Email> out;
    for (Purpose p : all_purposes()) out.push_back(preview(p, origin));
    return out;
}

}  // namespace signin
