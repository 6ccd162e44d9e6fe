// The OpenID provider's operations over the store (oidc_issuer.hpp).
#include "signin/oidc_issuer.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <memory>
#include <optional>
#include <variant>
#include <utility>
#include <vector>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "form.hpp"
#include "signin/emails.hpp"
#include "signin/i18n.hpp"

namespace signin {
namespace {

// The English texts of the provider's pages (msgids of the catalogs; src/i18n/extract.py reads
// this table), by what they are.
enum PageText : std::size_t {
    kAllowTitle, kAsksToSignIn, kItWillSee, kYourAccount, kScopeOpenid, kScopeEmail, kScopeProfile, kScopeOffline,
    kAllow, kDeny, kRefusedTitle, kCannotBeAnswered, kGoBack, kSignOutTitle, kSignOutOf, kAppAsksSignOut, kSignOut,
    kStaySignedIn, kSignedOutTitle, kNoLongerSignedIn,
};
constexpr std::string_view kPageTexts[] = {
    "Allow {client}?",
    "{client} asks to sign you in",
    "As {account} on {site}, it will see:",
    "your account",
    "who you are on this site (an identifier that stays the same)",
    "your email address",
    "your roles on this site",
    "keep access while you are away",
    "Allow",
    "Deny",
    "Sign-in request refused",
    "This sign-in request cannot be answered",
    "The application that sent you here to {site} is not set up for it ({error}). Go back to it and try again, or tell its operator.",
    "Sign out?",
    "Sign out of {site}?",
    "An application asks to sign you out.",
    "Sign out",
    "Stay signed in",
    "Signed out",
    "You are no longer signed in to {site}.",
};

OpAnswer answer_error(const op::TokenError &e) {
    OpAnswer a;
    a.status = e.status;
    a.body = op::token_error_json(e);
    if (e.basic_challenge) a.www_authenticate = "Basic realm=\"oauth2\"";
    if (e.status < 500) a.outcome = OpOutcome::Refused;
    return a;
}

op::TokenError server_error() { return op::TokenError{"server_error", "The request could not be completed.", 500}; }

// A new secret to hand out and the key the store keeps it under.
std::pair<Secret, std::string> new_secret(Millis now) {
    Secret s(enc::ordered_secret(now));
    std::string key = record_key(s.reveal());
    return {std::move(s), std::move(key)};
}

bool has_scope(const std::vector<std::string> &scopes, std::string_view s) {
    return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
}

// The ID token of a grant, to be signed with the client's algorithm once the grant is durable:
// its key (nullptr when none of it: nginx -t refuses that configuration) and its claims.
void id_token_for(TokenGrant &g, const OpSite &site, const op::Client &c, const User &u,
                  const std::vector<std::string> &scopes, const std::vector<std::string> &amr, Millis auth_time,
                  const std::string &nonce, Millis now) {
    g.key = site.keys != nullptr ? site.keys->signer(c.alg) : nullptr;
    if (g.key == nullptr) return;
    op::IdToken t;
    t.issuer = site.issuer;
    t.client_id = c.id;
    t.user = &u;
    t.email = has_scope(scopes, "email");
    t.amr = amr;
    t.auth_time = auth_time;
    t.nonce = nonce;
    t.now = now;
    g.id_claims = op::id_token_claims(t);
}

// The bearer token of an Authorization header ("" when it names none).
std::string_view bearer(std::string_view header) {
    constexpr std::string_view kScheme = "bearer ";
    if (header.size() <= kScheme.size()) return {};
    for (std::size_t i = 0; i < kScheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return {};
    }
    std::string_view t = header.substr(kScheme.size());
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    return t;
}

OpAnswer invalid_token(const char *why) {
    OpAnswer a;
    a.status = 401;
    a.body = op::token_error_json(op::TokenError{"invalid_token", why, 401});
    a.www_authenticate = std::string("Bearer error=\"invalid_token\", error_description=\"") + why + "\"";
    return a;
}

// What a spent code gave (its access token, its refresh family) is taken back: a code used twice
// was seen by somebody else (RFC 6749 §4.1.2). The caller commits.
void revoke_grant(WriteTxn &txn, const op::CodeRecord &code) {
    if (!code.access_key.empty()) txn.del_oidc_access_token(code.access_key);
    if (!code.family_id.empty()) txn.end_oidc_family(code.family_id);
}

// A live code is spent in its one write: with what it gave (a grant), or nothing (a refusal).
void spend(WriteTxn &txn, std::optional<op::CodeRecord> &code) {
    if (!code || code->spent) return;
    code->spent = true;
    txn.put_oidc_code(*code);
}

// authorization_code: the code read in txn, checked, spent, and what it gives written. The caller
// commits.
std::variant<TokenGrant, op::TokenError> exchange_code(WriteTxn &txn, const OpSite &site, const op::TokenRequest &t,
                                                      const op::Client &c, Millis now, std::string_view client,
                                                      bool &reused) {
    const std::string key = record_key(t.code.reveal());
    txn.serialize_on(key);
    auto code = txn.oidc_code(key);
    const op::CodeCheck check = op::check_code(code ? &*code : nullptr, t, c, now);
    const std::string user_id = code ? code->user_id : std::string();
    if (check.outcome == op::CodeOutcome::Reused) {
        reused = true;
        revoke_grant(txn, *code);
        txn.append_audit(detail::audit(now, "oidc.code_reused", {}, client, user_id, c.id));
        return check.error;
    }
    if (check.outcome != op::CodeOutcome::Ok) {
        spend(txn, code);
        txn.append_audit(detail::audit(now, "oidc.refused", {}, client, user_id, c.id + ": " + check.error.description));
        return check.error;
    }
    auto user = txn.user_by_id(code->user_id);
    if (!user || !op::may_use(c, *user, code->mfa)) {
        spend(txn, code);
        txn.append_audit(detail::audit(now, "oidc.refused", {}, client, code->user_id, c.id + ": may not use"));
        return op::TokenError{"invalid_grant", "This account may not use this application.", 400};
    }
    TokenGrant g;
    g.scopes = code->scopes;
    auto [access, access_key] = new_secret(now);
    std::string family_id;
    if (auto family = op::new_family(*code, enc::uuid7(now), now)) {
        auto [refresh, refresh_key] = new_secret(now);
        txn.put_oidc_family(*family);
        txn.put_oidc_refresh_token(op::refresh_token_record(*family, refresh_key, now));
        family_id = family->id;
        g.refresh = std::move(refresh);
    }
    txn.put_oidc_access_token(op::new_access_token(access_key, c.id, user->id, g.scopes, family_id, now));
    code->family_id = family_id;
    code->access_key = access_key;
    spend(txn, code);
    g.access = std::move(access);
    id_token_for(g, site, c, *user, g.scopes, code->amr, code->auth_time, code->nonce, now);
    txn.append_audit(detail::audit(now, "oidc.granted", user->email, client, user->id, c.id + ": code"));
    return g;
}

// refresh_token: the family's next generation, or its end when an old token came back. The
// caller commits.
std::variant<TokenGrant, op::TokenError> rotate(WriteTxn &txn, const OpSite &site, const op::TokenRequest &t,
                                               const op::Client &c, Millis now, std::string_view client, bool &reused) {
    const std::string key = record_key(t.refresh_token.reveal());
    txn.serialize_on(key);
    auto token = txn.oidc_refresh_token(key);
    std::optional<op::RefreshFamily> family = token ? txn.oidc_family(token->family_id) : std::nullopt;
    const op::RefreshCheck check = op::use_refresh(token ? &*token : nullptr, family ? &*family : nullptr, t, c, now);
    const std::string user_id = family ? family->user_id : std::string();
    if (check.outcome == op::RefreshOutcome::Reused) {
        reused = true;
        txn.end_oidc_family(family->id);
        txn.append_audit(detail::audit(now, "oidc.refresh_reused", {}, client, user_id, c.id));
        return check.error;
    }
    if (check.outcome != op::RefreshOutcome::Rotate) {
        txn.append_audit(detail::audit(now, "oidc.refused", {}, client, user_id, c.id + ": " + check.error.description));
        return check.error;
    }
    auto user = txn.user_by_id(family->user_id);
    if (!user || !op::may_use(c, *user, family->mfa)) {
        txn.end_oidc_family(family->id);
        txn.append_audit(detail::audit(now, "oidc.refused", {}, client, family->user_id, c.id + ": may not use"));
        return op::TokenError{"invalid_grant", "This account may not use this application.", 400};
    }
    TokenGrant g;
    g.scopes = check.scopes;
    auto [access, access_key] = new_secret(now);
    auto [refresh, refresh_key] = new_secret(now);
    txn.put_oidc_family(*family);
    txn.put_oidc_refresh_token(op::refresh_token_record(*family, refresh_key, now));
    txn.put_oidc_access_token(op::new_access_token(access_key, c.id, user->id, g.scopes, family->id, now));
    g.access = std::move(access);
    g.refresh = std::move(refresh);
    id_token_for(g, site, c, *user, g.scopes, family->amr, family->auth_time, {}, now);
    txn.append_audit(detail::audit(now, "oidc.granted", user->email, client, user->id, c.id + ": refresh"));
    return g;
}

// The provider's pages in one language: each text is the catalog's (English when the catalog
// lacks it), HTML-escaped, with its {arguments} filled in escaped (and wrapped in `tag`, when
// given, as the account in <strong>).
class Words {
public:
    explicit Words(const PageLanguage &l)
        : langs_(l.languages != nullptr ? l.languages : english_.get()),
          lang_(l.languages != nullptr && l.index < l.languages->size() ? l.index : 0) {}

    struct Value {
        std::string name, text;
        std::string_view tag = {};
    };
    std::string say(std::string_view english, const std::vector<Value> &values = {}) const {
        // each value goes in as a marker that escaping leaves alone, then is put in its place
        auto marker = [](std::size_t i) { return "\x01" + std::string(1, static_cast<char>('A' + i)) + "\x01"; };
        std::vector<i18n::Arg> args;
        for (std::size_t i = 0; i < values.size(); i++) args.push_back(i18n::text_arg(values[i].name, marker(i)));
        std::string escaped;
        append_html_escaped(escaped, langs_->format(lang_, english, args));
        for (std::size_t i = 0; i < values.size(); i++) {
            const std::string marker_i = marker(i);
            std::string html;
            if (!values[i].tag.empty()) html.append("<").append(values[i].tag).append(">");
            append_html_escaped(html, values[i].text);
            if (!values[i].tag.empty()) html.append("</").append(values[i].tag).append(">");
            for (std::size_t at = escaped.find(marker_i); at != std::string::npos; at = escaped.find(marker_i, at + html.size())) {
                escaped.replace(at, marker_i.size(), html);
            }
        }
        return escaped;
    }

    // The text unescaped, for a value of another.
    std::string plain(std::string_view english) const { return langs_->format(lang_, english); }

    // The page's head: the module's stylesheet first (`module_css`, "" = none), then the site's.
    std::string head(std::string_view title, std::string_view stylesheet, std::string_view module_css) const {
        std::string out = "<!doctype html>\n<html lang=\"";
        append_html_escaped(out, langs_->tag(lang_));
        out += langs_->rtl(lang_) ? "\" dir=\"rtl\">" : "\" dir=\"ltr\">";
        out += "<head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>";
        out += title;
        out += "</title>";
        for (std::string_view css : {module_css, stylesheet}) {
            if (css.empty()) continue;
            out += "<link rel=\"stylesheet\" href=\"";
            append_html_escaped(out, css);
            out += "\">";
        }
        return out + "</head><body><main>";
    }

private:
    std::shared_ptr<const i18n::Languages> english_ = i18n::Languages::english();
    const i18n::Languages *langs_;
    std::size_t lang_;
};

// What each scope lets the application see, as the consent page says it.
std::string_view scope_words(std::string_view scope) {
    if (scope == "openid") return kPageTexts[kScopeOpenid];
    if (scope == "email") return kPageTexts[kScopeEmail];
    if (scope == "profile") return kPageTexts[kScopeProfile];
    if (scope == "offline_access") return kPageTexts[kScopeOffline];
    return {};
}

// A form posted to `action` with the request's query and a decision: allow or deny.
std::string decision_form(const Words &w, std::string_view action, std::string_view query, std::string_view allow,
                          std::string_view deny) {
    std::string out = "<form method=\"post\" action=\"";
    append_html_escaped(out, action);
    out += "\"><input type=\"hidden\" name=\"query\" value=\"";
    append_html_escaped(out, query);
    out += "\"><div class=\"stack\"><button type=\"submit\" name=\"decision\" value=\"allow\">" + w.say(allow) +
           "</button> <button type=\"submit\" class=\"secondary\" name=\"decision\" value=\"deny\">" + w.say(deny) + "</button></div></form>";
    return out;
}

}  // namespace

std::optional<ConsentForm> parse_consent_form(std::string_view body) {
    if (body.size() > op::kMaxQuery * 3 + 64) return std::nullopt;
    auto p = form::Params::parse(body);
    if (p.malformed || !p.duplicate.empty()) return std::nullopt;
    const std::string *query = p.get("query");
    const std::string decision = p.value("decision");
    if (query == nullptr || query->size() > op::kMaxQuery || (decision != "allow" && decision != "deny")) {
        return std::nullopt;
    }
    return ConsentForm{*query, decision == "allow"};
}

std::vector<std::string> op_page_messages() {
    std::vector<std::string> out(std::begin(kPageTexts), std::end(kPageTexts));
    for (std::string_view refusal : {op::kRefusalMalformed, op::kRefusalTwoClientIds, op::kRefusalTwoRedirectUris,
                                     op::kRefusalNoClient, op::kRefusalUnknownClient, op::kRefusalNoRedirectUri,
                                     op::kRefusalWrongRedirectUri, op::kRefusalTooLong}) {
        out.emplace_back(refusal);
    }
    return out;
}

std::string consent_page(const op::AuthorizeRequest &r, const User &user, std::string_view site_name,
                         std::string_view action, std::string_view query, std::string_view stylesheet,
                         const PageLanguage &lang, std::string_view module_css) {
    const Words w(lang);
    std::string out = w.head(w.say(kPageTexts[kAllowTitle], {{"client", r.client_id}}), stylesheet, module_css);
    out += "<h1>" + w.say(kPageTexts[kAsksToSignIn], {{"client", r.client_id}}) + "</h1><p>";
    const std::string account = user.email.empty() ? w.plain(kPageTexts[kYourAccount]) : user.email;
    out += w.say(kPageTexts[kItWillSee], {{"account", account, "strong"}, {"site", std::string(site_name)}});
    out += "</p><ul>";
    for (const auto &s : r.scopes) {
        if (const std::string_view words = scope_words(s); !words.empty()) out += "<li>" + w.say(words) + "</li>";
    }
    out += "</ul>" + decision_form(w, action, query, kPageTexts[kAllow], kPageTexts[kDeny]) + "</main></body></html>\n";
    return out;
}

std::string refusal_page(const op::AuthorizeError &e, std::string_view site_name, std::string_view stylesheet,
                         const PageLanguage &lang, std::string_view module_css) {
    const Words w(lang);
    std::string out = w.head(w.say(kPageTexts[kRefusedTitle]), stylesheet, module_css);
    out += "<h1>" + w.say(kPageTexts[kCannotBeAnswered]) + "</h1><p>" + w.say(e.description) + "</p><p>";
    out += w.say(kPageTexts[kGoBack], {{"site", std::string(site_name)}, {"error", e.error, "code"}});
    out += "</p></main></body></html>\n";
    return out;
}

std::string end_session_page(std::string_view site_name, std::string_view action, std::string_view query,
                             std::string_view stylesheet, const PageLanguage &lang, std::string_view module_css) {
    const Words w(lang);
    std::string out = w.head(w.say(kPageTexts[kSignOutTitle]), stylesheet, module_css);
    out += "<h1>" + w.say(kPageTexts[kSignOutOf], {{"site", std::string(site_name)}}) + "</h1><p>" +
           w.say(kPageTexts[kAppAsksSignOut]) + "</p>";
    out += decision_form(w, action, query, kPageTexts[kSignOut], kPageTexts[kStaySignedIn]) + "</main></body></html>\n";
    return out;
}

std::string signed_out_page(std::string_view site_name, std::string_view stylesheet, const PageLanguage &lang,
                            std::string_view module_css) {
    const Words w(lang);
    std::string out = w.head(w.say(kPageTexts[kSignedOutTitle]), stylesheet, module_css);
    out += "<h1>" + w.say(kPageTexts[kSignedOutTitle]) + "</h1><p>" +
           w.say(kPageTexts[kNoLongerSignedIn], {{"site", std::string(site_name)}}) + "</p></main></body></html>\n";
    return out;
}

Result<op::Decision> OidcIssuer::decide(const OpSite &site, const op::AuthorizeRequest &r, const Principal *p,
                                        bool login_done, bool consent_done, std::string_view client) {
    return detail::guarded("oidc authorize", [&]() -> Result<op::Decision> {
        const op::Client *c = site.clients != nullptr ? site.clients->find(r.client_id) : nullptr;
        if (c == nullptr) return Error{Code::NotFound, "no such client"};
        const Millis now = engine_.now();
        op::SignedIn s;
        std::optional<op::ConsentRecord> consent;
        if (p != nullptr) {
            s.user = &p->user;
            s.auth_time = p->session.created_at;
            s.mfa = p->session.mfa;
            consent = engine_.store_->read()->oidc_consent(p->user.id, c->id);
            s.consented = op::covers(consent ? &*consent : nullptr, r);
        }
        s.login_done = login_done;
        s.consent_done = consent_done;
        op::Decision d = op::decide(r, *c, s, now);
        if (d.next == op::Next::Refuse) {
            auto txn = engine_.store_->write();
            txn->append_audit(detail::audit(now, "oidc.refused", p ? p->user.email : std::string(), client,
                                            p ? p->user.id : std::string(), c->id + ": " + d.refusal.error));
            txn->commit();
        }
        return d;
    });
}

Status OidcIssuer::consent(const op::AuthorizeRequest &r, const Principal &p, std::string_view client) {
    return detail::guarded("oidc consent", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto before = txn->oidc_consent(p.user.id, r.client_id);
        txn->put_oidc_consent(op::grant_consent(before ? &*before : nullptr, r, p.user.id, now));
        txn->append_audit(detail::audit(now, "oidc.consented", p.user.email, client, p.user.id,
                                        r.client_id + ": " + r.scope()));
        txn->commit();
        return ok_status();
    });
}

Result<std::string> OidcIssuer::issue_code(const OpSite &site, const op::AuthorizeRequest &r, const Principal &p,
                                           std::string_view client) {
    return detail::guarded("oidc code", [&]() -> Result<std::string> {
        const Millis now = engine_.now();
        auto [code, key] = new_secret(now);
        auto txn = engine_.store_->write();
        txn->put_oidc_code(
            op::new_code(r, p.user.id, p.session.created_at, p.session.method, p.session.mfa, key, now, site.code_ttl));
        txn->append_audit(detail::audit(now, "oidc.code_issued", p.user.email, client, p.user.id, r.client_id));
        txn->commit();
        return op::code_redirect(r, code.reveal(), site.issuer);
    });
}

void OidcIssuer::refused(std::string_view client_id, std::string_view why, std::string_view client) {
    (void)engine_.record(detail::audit(engine_.now(), "oidc.refused", {}, client, {},
                                       std::string(client_id) + ": " + std::string(why)));
}

TokenGrant OidcIssuer::token_write(const OpSite &site, std::string_view body, std::string_view authorization,
                                   std::string_view client) {
    auto refusal = [](const op::TokenError &e) {
        TokenGrant g;
        g.answer = answer_error(e);
        return g;
    };
    auto parsed = op::parse_token_request(body, authorization);
    if (auto *e = std::get_if<op::TokenError>(&parsed)) return refusal(*e);
    const auto &t = std::get<op::TokenRequest>(parsed);
    auto who = op::authenticate(t, *site.clients);
    if (auto *e = std::get_if<op::TokenError>(&who)) {
        refused(t.client_id, "client authentication", client);
        return refusal(*e);
    }
    const op::Client &c = *std::get<const op::Client *>(who);
    auto done = detail::guarded("oidc token", [&]() -> Result<TokenGrant> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        bool reused = false;
        auto g = t.grant == op::Grant::AuthorizationCode ? exchange_code(*txn, site, t, c, now, client, reused)
                                                         : rotate(*txn, site, t, c, now, client, reused);
        txn->commit();
        if (auto *e = std::get_if<op::TokenError>(&g)) {
            TokenGrant out = refusal(*e);
            if (reused) out.answer.outcome = OpOutcome::Reused;
            return out;
        }
        TokenGrant out = std::move(std::get<TokenGrant>(g));
        out.answer.outcome = OpOutcome::Granted;
        return out;
    });
    return done ? std::move(done).value() : refusal(server_error());
}

OpAnswer OidcIssuer::token_answer(TokenGrant &&g) {
    if (g.answer.outcome != OpOutcome::Granted) return std::move(g.answer);
    const std::string id_token = g.key != nullptr && !g.id_claims.empty() ? g.key->sign_jwt(g.id_claims) : std::string();
    g.answer.body = op::token_response(g.access.reveal(), op::kAccessTokenTtl, id_token, g.refresh.reveal(), g.scopes);
    return std::move(g.answer);
}

OpAnswer OidcIssuer::token(const OpSite &site, std::string_view body, std::string_view authorization,
                           std::string_view client) {
    return token_answer(token_write(site, body, authorization, client));
}

OpAnswer OidcIssuer::userinfo(std::string_view authorization) {
    const std::string_view token = bearer(authorization);
    if (token.empty()) {
        OpAnswer a;
        a.status = 401;
        a.body = op::token_error_json(op::TokenError{"invalid_request", "A bearer token is needed.", 401});
        a.www_authenticate = "Bearer";
        return a;
    }
    auto done = detail::guarded("oidc userinfo", [&]() -> Result<OpAnswer> {
        auto txn = engine_.store_->read();
        auto at = txn->oidc_access_token(record_key(token));
        if (!at || at->expires_at <= engine_.now()) return invalid_token("The access token is not valid.");
        auto user = txn->user_by_id(at->user_id);
        if (!user || user->suspended) return invalid_token("The access token is not valid.");
        OpAnswer a;
        a.body = op::userinfo(*user, at->scopes);
        return a;
    });
    return done ? std::move(done).value() : answer_error(server_error());
}

OpAnswer OidcIssuer::revoke(const OpSite &site, std::string_view body, std::string_view authorization,
                            std::string_view client) {
    auto parsed = op::parse_revoke_request(body, authorization);
    if (auto *e = std::get_if<op::TokenError>(&parsed)) return answer_error(*e);
    const auto &t = std::get<op::RevokeRequest>(parsed);
    auto who = op::authenticate(t, *site.clients);
    if (auto *e = std::get_if<op::TokenError>(&who)) {
        refused(t.client_id, "client authentication", client);
        return answer_error(*e);
    }
    const op::Client &c = *std::get<const op::Client *>(who);
    auto done = detail::guarded("oidc revoke", [&]() -> Result<OpAnswer> {
        const Millis now = engine_.now();
        const std::string key = record_key(t.token.reveal());
        auto txn = engine_.store_->write();
        OpAnswer a;
        a.body = "{}";
        if (auto at = txn->oidc_access_token(key); at && at->client_id == c.id) {
            a.outcome = OpOutcome::Revoked;
            txn->del_oidc_access_token(key);
            txn->append_audit(detail::audit(now, "oidc.revoked", {}, client, at->user_id, c.id + ": access token"));
        } else if (auto rt = txn->oidc_refresh_token(key)) {
            auto family = txn->oidc_family(rt->family_id);
            if (family && family->client_id == c.id) {
                a.outcome = OpOutcome::Revoked;
                txn->end_oidc_family(family->id);
                txn->append_audit(detail::audit(now, "oidc.revoked", {}, client, family->user_id, c.id + ": refresh token"));
            }
        }
        txn->commit();
        return a;
    });
    return done ? std::move(done).value() : answer_error(server_error());
}

}  // namespace signin
