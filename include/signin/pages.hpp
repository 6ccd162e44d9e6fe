// The ready-made browser pages of `signin_pages on`: the sign-in page and the
// account page, rendered from the templates of src/pages, and the stylesheet and scripts they
// load, which the module serves itself (no third-party asset). The pages run no inline script,
// so they work under content_security_policy(). Valid C++17: the glue includes it.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/i18n.hpp"

namespace signin::pages {

// SignIn and Account are served by the signin_api location; Forbidden by a gated location whose
// signin_allow/signin_deny refused a signed-in browser (it loads its assets from signin_login_url);
// Unavailable (a 503) by either when the store cannot be used, in place of the JSON a script gets;
// Admin (signin_admin) by the signin_api location at {auth_path}/admin/.
enum class Page { SignIn, Account, Forbidden, Unavailable, Admin };

// What a page is told by the server: the rest it learns from the API.
struct Settings {
    std::string site_name;      // signin_site_name (or the origin's host)
    bool email = true;          // signin_email off: no address form (providers and passkeys only)
    bool passwords = false;     // signin_passwords on: the password forms
    bool registration = false;  // signin_registration on: the pages ask /register, not /login
    bool mfa = false;           // signin_mfa on: the second-factor step and the account's two-step section
    bool passkeys = false;      // signin_passkeys on: passkey sign-in and the account's passkeys
    long long remember_days = 30;  // signin_mfa_remember, in whole days (0: no "remember this browser")
    long long resend_seconds = 60;  // signin_token_resend: how long "send a new code" waits
    long long token_minutes = 10;   // signin_token_ttl, in minutes: how long a code stays valid
    long long fresh_minutes = 10;   // signin_password_fresh: shown where a fresh session is needed
    std::string stylesheet;     // signin_pages_css: a same-origin path loaded after the module's own
    // Forbidden only
    std::string account;    // the signed-in address
    std::string login_url;  // signin_login_url: its assets/ are the page's; "" = "assets/" here
    std::string return_to;  // the path and query that was refused (percent-encoded on the page)
};

// The page's HTML in English. Every value is HTML-escaped; asset URLs carry their content hash
// (?v=), so a new module version is never served a stale script from a cache.
std::string render(Page page, const Settings &settings);

// A stylesheet, script or image of the pages, with its content type and content hash.
struct Asset {
    std::string_view name, content_type, body, hash;
};

// The pages in every configured language (signin_languages), translated once: the templates'
// texts ({{_ English text _}}, an ICU message), lang and dir, the language picker, and the
// strings the scripts show. Those are one script per language, "i18n-TAG.js", an asset named in
// the page with its content hash like the others, so that a translated page is no larger than
// an English one and the catalog is cached once for every page. `fixed` gives what the texts say
// that is the same for every request (token_minutes, fresh_minutes, remember_days); a request
// then costs what an English page costs. Not copied or moved once made (assets point into it).
class Localized {
public:
    Localized(std::shared_ptr<const i18n::Languages> languages, const Settings &fixed);
    Localized(const Localized &) = delete;
    Localized &operator=(const Localized &) = delete;
    // The page in language `lang` (an index of languages(); out of range: the first).
    std::string render(Page page, std::size_t lang, const Settings &settings) const;
    const i18n::Languages &languages() const { return *languages_; }
    // The scripts' catalog of a language by its asset name ("i18n-de.js"): a script setting
    // globalThis.signinCatalog to {"English text": "translation"}. nullopt for any other name, and
    // for a language that translates none of the scripts' strings (its pages link no catalog).
    std::optional<Asset> catalog(std::string_view name) const;

private:
    struct Catalog {
        std::string name, body, hash;
    };
    std::shared_ptr<const i18n::Languages> languages_;
    std::vector<Catalog> catalogs_;                      // per language; an empty body: none
    std::vector<std::array<std::string, 5>> templates_;  // per language, per Page
};

// The English texts of the pages: every {{_ ... _}} of the templates and every t("...") of their
// scripts, whitespace folded as the catalogs hold them (the msgids the catalogs must have).
std::vector<std::string> messages();

// An asset of the module by its file name ("pages.css", "signin.js"); nullptr for any other name
// (the page templates themselves are not assets, and the catalogs are Localized's).
const Asset *asset(std::string_view name);

// The Content-Security-Policy of the pages: scripts, styles, images and fetches from this origin
// only, no inline script or style, no framing, no plugins, forms posting nowhere else.
// The Forbidden page's policy is the same; an absolute signin_login_url's origin is added to
// script-src and style-src (see content_security_policy(std::string_view)).
constexpr std::string_view content_security_policy() {
    return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
}

// The policy for a page whose assets come from `login_url` (an http(s) URL of another origin is
// allowed for scripts and styles; a path changes nothing).
std::string content_security_policy(std::string_view login_url);

// ---------------------------------------------------------------- the dev mailbox
// The page signin_dev_mailbox shows a browser: the emails it keeps, newest first, each with its
// code large and selected by one click, its link, its text body and its HTML body in a sandboxed
// iframe (loaded from `?body=N`). The page runs no script and loads nothing but the HTML bodies;
// its one stylesheet is inline, allowed by its hash (mailbox_policy()).
struct MailboxEmail {
    unsigned long long seq = 0;  // the email's number: `?body=N` names it
    long long received_ms = 0;   // when the mailbox stored it (Unix time, ms)
    // the delivery's fields; "" when it has none (a POSTed delivery need only have an email)
    std::string email, subject, purpose, code, link, text;
    bool html = false;  // whether it has an HTML body
};
// The page; `emails` oldest first, as the mailbox keeps them.
std::string render_mailbox(const std::vector<MailboxEmail> &emails);
// When an email came, as the page and the mailbox's JSON show it: "2024-05-01T12:34:56.789Z".
std::string mailbox_time(long long received_ms);
// The page's Content-Security-Policy: nothing but its own style (by hash) and the HTML bodies it
// frames from this origin.
const std::string &mailbox_policy();
// The policy of an HTML body served on its own (`?body=N`): its inline styles and images, as in
// the email previews, no script, and `sandbox`, so that it is an opaque origin even when opened
// outside the page's iframe (which is sandboxed as well).
constexpr std::string_view mailbox_body_policy() {
    return "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; sandbox; frame-ancestors 'self'; "
           "base-uri 'none'; form-action 'none'";
}

}  // namespace signin::pages
