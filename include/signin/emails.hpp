// The ready-made emails (one per Delivery purpose): a subject, a plain text and an HTML body for
// every purpose, tagged `auth.<purpose>`; any purpose's email can be replaced with a custom
// template, and a preview of every email can be listed for an admin area. Valid C++17: the glue
// includes it.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/i18n.hpp"
#include "signin/types.hpp"

namespace signin {

// One email as the mailer gets it.
struct Email {
    Purpose purpose = Purpose::SignIn;
    std::string tag;  // auth.<purpose>, e.g. auth.sign_in
    std::string subject, text, html;
    std::string link;  // {{link}} as rendered: empty without a link base or outside the sign-in purposes
};

// A template: {{name}} is replaced by a value. Names:
//   {{code}}           the short code, XXXX-XXXX (empty in the notices EmailChanged, PasswordChanged,
//                      MfaLocked and NewSignIn)
//   {{token}}          the whole token (43 characters), for templates written before codes
//   {{site_name}}      signin_site_name (default: the origin without its scheme)
//   {{email}}          the address written to
//   {{origin}}         the site (signin_origin)
//   {{minutes}}        how long a code stays valid (signin_token_ttl), in whole minutes
//   {{password_note}}  in Registration: a warning when a password was chosen with the request
//                      (empty otherwise); in other purposes, always empty
//   {{link}}           the link base + "#token=" + the token (the fragment never reaches a server);
//                      empty when no link base is set. Only in the purposes whose token signs in
//                      (SignIn, Registration, AlreadyRegistered, Invitation), never in a subject;
//                      in NewSignIn the account page, which carries no token
//   {{when}}, {{device}}, {{client}}  in NewSignIn: when the account was signed in to (a date and
//                      time in UTC, in the email's language), the browser and system ("Firefox 128 on
//                      Windows"; fixed names, never the User-Agent's own words), and the client's
//                      address; empty in the other purposes
// In `html` every value is HTML-escaped. An empty `html` is made from `text` (escaped, in <pre>).
struct EmailTemplate {
    std::string subject, text, html;
};

class Emails {
public:
    // The built-in email of every purpose. token_ttl: signin_token_ttl, for {{minutes}}.
    explicit Emails(Millis token_ttl = 10 * 60 * 1000);

    // A template file: the first line "Subject: <one line>", then an empty line, then the text
    // body. html (may be empty): the HTML body. The result is checked as replace() does.
    static Result<EmailTemplate> parse(Purpose purpose, std::string_view file, std::string_view html = {});

    // Whether t would make a good email of this purpose; the refusals of replace().
    static Status check(Purpose purpose, const EmailTemplate &t);

    // Replaces one purpose's email. Refused (Code::InvalidRequest, with a message naming the
    // problem): an unknown or unclosed {{name}}; a purpose that carries a code without {{code}} or
    // {{token}} in its text (and its html, when given); a notice with either; a code or a link in
    // the subject (subjects show on lock screens and in mail logs); {{link}} in a purpose whose
    // token does not sign in; an empty or multi-line subject.
    // `lang` (a signin_languages tag): the template of that language only; "" for every language
    // without one of its own.
    Status replace(Purpose purpose, EmailTemplate t, std::string_view lang = {});
    // Whether replace() changed this purpose's email (for `lang`, or for every language).
    bool is_custom(Purpose purpose, std::string_view lang = {}) const;

    // The languages the built-in emails are written in (signin_languages; English alone until
    // set). A Delivery's lang picks one; "" or one not configured is the first.
    void set_languages(std::shared_ptr<const i18n::Languages> languages);
    // The English texts of the built-in emails (the msgids the catalogs must have).
    static std::vector<std::string> messages();

    // {{minutes}}: how long a code stays valid (signin_token_ttl).
    void set_token_ttl(Millis token_ttl) {
        token_ttl_ = token_ttl;
        build();
    }
    // {{site_name}}: signin_site_name.
    void set_site_name(std::string name) { site_name_ = std::move(name); }
    // {{link}}'s base, e.g. "https://example.com/auth/": the glue sets it from the signin_api location.
    void set_link_base(std::string base) { link_base_ = std::move(base); }

    Email render(const Delivery &d, std::string_view origin) const;

    // One purpose's email rendered for `origin` with a sample code and address (and the link base
    // with the sample token); and every one.
    Email preview(Purpose purpose, std::string_view origin) const;
    std::vector<Email> previews(std::string_view origin) const;

    static constexpr std::string_view kPreviewToken = "PREVIEW-CODE-0000";
    static constexpr std::string_view kPreviewCode = "A1B2-C3D4";
    static constexpr std::string_view kPreviewEmail = "someone@example.com";
    static constexpr Millis kPreviewTime = 1798761600000;  // 2027-01-01 00:00 UTC, a NewSignIn's time

private:
    static constexpr std::size_t kPurposes = 10;
    using Customs = std::array<std::optional<EmailTemplate>, kPurposes>;
    // One language's built-in emails and the words rendering puts in them.
    struct Builtin {
        std::array<EmailTemplate, kPurposes> linked;    // with their link button
        std::array<EmailTemplate, kPurposes> unlinked;  // without: no link base
        std::string validity;                           // {{validity}}: "10 minutes", "10 Minuten"
        std::string password_note;                      // {{password_note}} when a password was chosen
    };
    // (Re)writes the built-in emails of every language.
    void build();
    std::size_t lang_index(std::string_view tag) const;

    std::shared_ptr<const i18n::Languages> languages_;
    std::vector<Builtin> builtin_;     // by language index
    Customs custom_;                   // signin_email_template without lang=
    std::map<std::string, Customs> custom_by_lang_;  // ... with lang=TAG, by the tag in lower case
    Millis token_ttl_;
    std::string site_name_, link_base_;
};

// Appends s to out with & < > " ' as HTML entities.
void append_html_escaped(std::string &out, std::string_view s);

// Every purpose, in the order of Purpose; and a purpose by its name (SignIn) or tag (sign_in, or
// auth.sign_in).
const std::array<Purpose, 10> &all_purposes();
std::optional<Purpose> purpose_from_text(std::string_view text);

}  // namespace signin
