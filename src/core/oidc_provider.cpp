// OpenID Connect, the provider's side (oidc_provider.hpp): clients, the authorization request,
// and what a sign-in still lacks.
#include "signin/oidc_provider.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "encoding.hpp"
#include "form.hpp"
#include "signin/engine.hpp"
#include "signin/json.hpp"
#include "signin/oidc.hpp"
#include "text.hpp"

namespace signin::op {
namespace {

Error config_error(std::string why) { return Error{Code::InvalidRequest, std::move(why)}; }

bool equal_ct(std::string_view a, std::string_view b) {
    return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool client_id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

bool valid_client_id(std::string_view id) {
    return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), client_id_char);
}

}  // namespace

const char *alg_name(Alg a) {
    switch (a) {
    case Alg::RS256: return "RS256";
    case Alg::ES256: return "ES256";
    case Alg::EdDSA: return "EdDSA";
    }
    return "?";
}

std::optional<Alg> parse_alg(std::string_view name) {
    for (Alg a : {Alg::RS256, Alg::ES256, Alg::EdDSA}) {
        if (name == alg_name(a)) return a;
    }
    return std::nullopt;
}

// ---------------------------------------------------------------- clients

std::string check_redirect_uri(std::string_view uri) {
    if (uri.size() > 2048) return "a redirect_uri is longer than 2048 bytes";
    for (char c : uri) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '<' || c == '>') {
            return "a redirect_uri holds a space, a quote, a backslash or a character outside printable ASCII";
        }
    }
    if (uri.find('#') != std::string_view::npos) return "a redirect_uri cannot have a fragment (\"#...\")";
    std::string_view rest;
    const bool https = uri.rfind("https://", 0) == 0;
    if (https) {
        rest = uri.substr(8);
    } else if (uri.rfind("http://", 0) == 0) {
        rest = uri.substr(7);
    } else {
        return "a redirect_uri must be an https URL (http only on a loopback host)";
    }
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
    if (authority.empty()) return "a redirect_uri needs a host";
    if (authority.find('@') != std::string_view::npos) return "a redirect_uri cannot hold user info (\"...@\")";
    std::string_view host = authority;
    if (host.front() == '[') {
        const auto close = host.find(']');
        if (close == std::string_view::npos) return "a redirect_uri's host is not valid";
        host = host.substr(0, close + 1);
    } else {
        host = host.substr(0, host.find(':'));
    }
    const std::string lower = text::lowered(host);
    if (!valid_host(lower)) return "a redirect_uri's host is not valid";
    if (!https && !is_loopback_host(lower)) return "a redirect_uri must be https (http only on a loopback host)";
    return {};
}

Result<Client> parse_client(const std::vector<std::string> &words) {
    if (words.empty()) return config_error("signin_oidc_client needs a name");
    Client c;
    c.id = words[0];
    if (!valid_client_id(c.id)) return config_error("a client's name is 1 to 64 of A-Z, a-z, 0-9, \".\", \"_\" and \"-\"");
    bool secret = false, is_public = false, consent = false, require = false, alg = false;
    for (std::size_t i = 1; i < words.size(); ++i) {
        const std::string_view w = words[i];
        if (w == "public") {
            if (is_public) return config_error("\"public\" is given twice");
            is_public = true;
            continue;
        }
        const auto eq = w.find('=');
        if (eq == std::string_view::npos) return config_error("unknown word \"" + std::string(w) + "\"");
        const std::string_view key = w.substr(0, eq), value = w.substr(eq + 1);
        auto once = [&](bool &seen) -> std::optional<Error> {
            if (seen) return config_error(std::string(key) + "= is given twice");
            seen = true;
            return std::nullopt;
        };
        if (key == "redirect_uri" || key == "post_logout_redirect_uri") {
            auto &list = key == "redirect_uri" ? c.redirect_uris : c.post_logout_redirect_uris;
            if (auto why = check_redirect_uri(value); !why.empty()) {
                // the same rules for both: the words name the redirect_uri's
                return config_error((key == "redirect_uri" ? "" : "post_logout_redirect_uri=, as ") + why + ": \"" +
                                    std::string(value) + "\"");
            }
            if (std::find(list.begin(), list.end(), value) != list.end()) {
                return config_error(std::string(key) + " \"" + std::string(value) + "\" is given twice");
            }
            list.emplace_back(value);
        } else if (key == "secret_file") {
            if (auto e = once(secret)) return *e;
            if (value.empty()) return config_error("secret_file= needs a path");
            c.secret_file = std::string(value);
        } else if (key == "consent") {
            if (auto e = once(consent)) return *e;
            if (value != "on" && value != "off") return config_error("consent= is on or off");
            c.consent = value == "on";
        } else if (key == "require") {
            if (auto e = once(require)) return *e;
            if (value != "mfa") return config_error("require= takes only \"mfa\"");
            c.require_mfa = true;
        } else if (key == "id_token_alg") {
            if (auto e = once(alg)) return *e;
            auto a = parse_alg(value);
            if (!a) return config_error("id_token_alg= is RS256, ES256 or EdDSA");
            c.alg = *a;
        } else if (key == "allow") {
            const auto colon = value.find(':');
            const std::string_view form = value.substr(0, colon);
            if (colon == std::string_view::npos || (form != "email" && form != "domain" && form != "role")) {
                return config_error("allow= is email:ADDRESS, domain:DOMAIN or role:ROLE");
            }
            auto rule = AccessRules::rule(true, form, value.substr(colon + 1));
            if (!rule) return config_error("allow=" + std::string(value) + ": " + rule.error().message);
            c.allow.push_back(std::move(rule.value()));
        } else {
            return config_error("unknown word \"" + std::string(w) + "\"");
        }
    }
    if (c.redirect_uris.empty()) return config_error("a client needs at least one redirect_uri=");
    if (secret && is_public) return config_error("a public client cannot have a secret_file=");
    if (!secret && !is_public) return config_error("a client needs secret_file=PATH, or \"public\" (PKCE instead of a secret)");
    c.is_public = is_public;
    return c;
}

Status set_secret(Client &c, std::string_view file_text) {
    if (c.is_public) return config_error("a public client has no secret");
    auto secret = oidc::parse_client_secret(file_text);
    if (!secret) return config_error("the secret_file of client \"" + c.id + "\" is empty");
    if (secret->reveal().size() < 32) {
        return config_error("the secret of client \"" + c.id + "\" is shorter than 32 characters (openssl rand -hex 32 makes one)");
    }
    if (secret->reveal().size() > 512 || text::has_control(secret->reveal())) {
        return config_error("the secret of client \"" + c.id + "\" is longer than 512 bytes or holds a control character");
    }
    c.secret_digest = secret_hash(secret->reveal());
    return ok_status();
}

bool secret_matches(const Client &c, std::string_view presented) {
    if (c.is_public || c.secret_digest.empty() || presented.empty() || presented.size() > 512) return false;
    const std::string digest = secret_hash(presented);
    return equal_ct(digest, c.secret_digest);
}

Status Clients::add(Client c) {
    if (by_id_.count(c.id) != 0) return config_error("client \"" + c.id + "\" is defined twice");
    std::string id = c.id;
    by_id_.emplace(std::move(id), std::move(c));
    return ok_status();
}

const Client *Clients::find(std::string_view id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------- form and query parsing

namespace {

// Whether every byte is printable ASCII (what state, nonce and the other echoed values may hold).
bool printable(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

bool base64url_chars(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

// The scopes this provider knows, in the order they are written back.
constexpr std::array<std::string_view, 4> kScopes = {"openid", "email", "profile", "offline_access"};

std::string with_params(std::string_view uri, std::initializer_list<std::pair<std::string_view, std::string_view>> params) {
    std::string out(uri);
    char sep = uri.find('?') == std::string_view::npos ? '?' : '&';
    for (const auto &[name, value] : params) {
        if (value.empty()) continue;
        out += sep;
        out += name;
        out += '=';
        out += enc::percent_encode(value);
        sep = '&';
    }
    return out;
}

}  // namespace

// ---------------------------------------------------------------- the authorization request

bool AuthorizeRequest::offline_access() const {
    return std::find(scopes.begin(), scopes.end(), "offline_access") != scopes.end();
}

std::string AuthorizeRequest::scope() const {
    std::string out;
    for (const auto &s : scopes) {
        if (!out.empty()) out += ' ';
        out += s;
    }
    return out;
}

namespace {

// A refusal sent back to the client: its error code and description.
struct Refusal {
    const char *error;
    std::string description;
};
using Refused = std::optional<Refusal>;

// The words of a space-separated parameter (scope, prompt).
std::vector<std::string_view> words(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto sp = text.find(' ');
        if (sp != 0) out.push_back(text.substr(0, sp));
        text = sp == std::string_view::npos ? std::string_view() : text.substr(sp + 1);
    }
    return out;
}

// response_type and response_mode, and the request objects this provider does not take.
Refused read_response_type(const form::Params &p) {
    // Core §6: request objects are not supported, and say so in their own words
    if (p.get("request") != nullptr) return Refusal{"request_not_supported", "Request objects are not supported."};
    if (p.get("request_uri") != nullptr) return Refusal{"request_uri_not_supported", "request_uri is not supported."};
    const std::string *response_type = p.get("response_type");
    if (response_type == nullptr) return Refusal{"invalid_request", "The request has no response_type."};
    if (*response_type != "code") return Refusal{"unsupported_response_type", "Only response_type=code is supported."};
    if (const std::string *mode = p.get("response_mode"); mode != nullptr && *mode != "query") {
        return Refusal{"invalid_request", "Only response_mode=query is supported."};
    }
    return std::nullopt;
}

// scope (openid required; scopes not understood are ignored, Core §5.4) and nonce.
Refused read_scope(const form::Params &p, AuthorizeRequest &r) {
    std::vector<bool> wanted(kScopes.size(), false);
    if (const std::string *scope = p.get("scope")) {
        for (std::string_view one : words(*scope)) {
            for (std::size_t i = 0; i < kScopes.size(); ++i) {
                if (one == kScopes[i]) wanted[i] = true;
            }
        }
    }
    if (!wanted[0]) return Refusal{"invalid_scope", "The scope must hold openid."};
    for (std::size_t i = 0; i < kScopes.size(); ++i) {
        if (wanted[i]) r.scopes.emplace_back(kScopes[i]);
    }
    const std::string nonce = p.value("nonce");
    if (nonce.size() > 512 || !printable(nonce)) return Refusal{"invalid_request", "The nonce is too long or not printable."};
    r.nonce = nonce;
    return std::nullopt;
}

// code_challenge and its method: S256 only, and required of a public client.
Refused read_pkce(const form::Params &p, const Client &client, AuthorizeRequest &r) {
    const std::string *challenge = p.get("code_challenge");
    const std::string *method = p.get("code_challenge_method");
    if (challenge == nullptr) {
        if (method != nullptr) return Refusal{"invalid_request", "code_challenge_method without a code_challenge."};
        if (client.is_public) return Refusal{"invalid_request", "This application must use PKCE (code_challenge with S256)."};
        return std::nullopt;
    }
    // RFC 7636 §4.3: an absent method means "plain", which gives nothing a listener could not read
    if (method == nullptr || *method != "S256") return Refusal{"invalid_request", "code_challenge_method must be S256."};
    if (challenge->size() != 43 || !base64url_chars(*challenge)) {
        return Refusal{"invalid_request", "The code_challenge is not an S256 challenge."};
    }
    r.code_challenge = *challenge;
    return std::nullopt;
}

// prompt, max_age and login_hint.
Refused read_prompt(const form::Params &p, AuthorizeRequest &r) {
    if (const std::string *prompt = p.get("prompt")) {
        for (std::string_view one : words(*prompt)) {
            if (one == "none") {
                r.prompt_none = true;
            } else if (one == "login") {
                r.prompt_login = true;
            } else if (one == "consent") {
                r.prompt_consent = true;
            } else {
                return Refusal{"invalid_request", "prompt takes none, login and consent only."};
            }
        }
        if (r.prompt_none && (r.prompt_login || r.prompt_consent)) {
            return Refusal{"invalid_request", "prompt=none cannot be combined with another value."};
        }
    }
    if (const std::string *max_age = p.get("max_age")) {
        if (max_age->empty() || max_age->size() > 10 ||
            !std::all_of(max_age->begin(), max_age->end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return Refusal{"invalid_request", "max_age is a number of seconds."};
        }
        r.max_age = std::stoll(*max_age);
    }
    if (const std::string *hint = p.get("login_hint"); hint != nullptr && hint->size() <= 320) {
        if (auto email = normalize_email(*hint)) r.login_hint = *email;  // a hint, nothing more: ignored when not an address
    }
    return std::nullopt;
}

AuthorizeError page_error(std::string error, std::string_view description) {
    AuthorizeError e;
    e.page = true;
    e.error = std::move(error);
    e.description = std::string(description);
    return e;
}

// The client and its redirect URI, or the refusal shown on a page: until both are known to be
// the client's own, nothing may be sent anywhere.
std::variant<const Client *, AuthorizeError> trusted_client(const form::Params &p, const Clients &clients) {
    if (p.malformed) return page_error("invalid_request", kRefusalMalformed);
    if (p.repeated("client_id")) return page_error("invalid_request", kRefusalTwoClientIds);
    if (p.repeated("redirect_uri")) return page_error("invalid_request", kRefusalTwoRedirectUris);
    const std::string *client_id = p.get("client_id");
    if (client_id == nullptr) return page_error("invalid_request", kRefusalNoClient);
    const Client *client = clients.find(*client_id);
    if (client == nullptr) return page_error("unauthorized_client", kRefusalUnknownClient);
    const std::string *redirect_uri = p.get("redirect_uri");
    if (redirect_uri == nullptr) return page_error("invalid_request", kRefusalNoRedirectUri);
    if (std::find(client->redirect_uris.begin(), client->redirect_uris.end(), *redirect_uri) == client->redirect_uris.end()) {
        return page_error("invalid_request", kRefusalWrongRedirectUri);
    }
    return client;
}

}  // namespace

Authorize parse_authorize(std::string_view query, const Clients &clients) {
    if (query.size() > kMaxQuery) return page_error("invalid_request", kRefusalTooLong);
    const form::Params p = form::Params::parse(query);
    auto trusted = trusted_client(p, clients);
    if (auto *e = std::get_if<AuthorizeError>(&trusted)) return std::move(*e);
    const Client &client = *std::get<const Client *>(trusted);

    AuthorizeRequest r;
    r.client_id = client.id;
    r.redirect_uri = p.value("redirect_uri");
    const std::string state = p.value("state");
    auto back = [&](Refusal refusal) {
        AuthorizeError e;
        e.error = refusal.error;
        e.description = std::move(refusal.description);
        e.redirect_uri = r.redirect_uri;
        // a state that could not be echoed safely is not echoed
        if (state.size() <= 1024 && printable(state) && !p.repeated("state")) e.state = state;
        return Authorize(std::move(e));
    };
    if (!p.duplicate.empty()) return back({"invalid_request", "The request names " + p.duplicate_shown() + " twice."});
    if (state.size() > 1024 || !printable(state)) return back({"invalid_request", "The state is too long or not printable."});
    r.state = state;
    if (auto refused = read_response_type(p)) return back(std::move(*refused));
    if (auto refused = read_scope(p, r)) return back(std::move(*refused));
    if (auto refused = read_pkce(p, client, r)) return back(std::move(*refused));
    if (auto refused = read_prompt(p, r)) return back(std::move(*refused));
    return r;
}

std::string error_redirect(const AuthorizeError &e, std::string_view issuer) {
    return with_params(e.redirect_uri, {{"error", e.error},
                                        {"error_description", e.description},
                                        {"state", e.state},
                                        {"iss", issuer}});
}

std::string code_redirect(const AuthorizeRequest &r, std::string_view code, std::string_view issuer) {
    return with_params(r.redirect_uri, {{"code", code}, {"state", r.state}, {"iss", issuer}});
}

Decision decide(const AuthorizeRequest &r, const Client &c, const SignedIn &s, Millis now) {
    Decision d;
    auto refuse = [&](const char *error, const char *description) {
        d.next = Next::Refuse;
        d.refusal.error = error;
        d.refusal.description = description;
        d.refusal.redirect_uri = r.redirect_uri;
        d.refusal.state = r.state;
        return d;
    };
    auto ask = [&](Next next, const char *error, const char *description) {
        // Core §3.1.2.1: prompt=none shows nothing; what would have been shown is the refusal
        if (r.prompt_none) return refuse(error, description);
        d.next = next;
        return d;
    };
    if (s.user == nullptr) return ask(Next::SignIn, "login_required", "Nobody is signed in.");
    if (r.prompt_login && !s.login_done) return ask(Next::SignIn, "login_required", "A new sign-in is needed.");
    if (r.max_age && !s.login_done && now - s.auth_time > *r.max_age * 1000) {
        return ask(Next::SignIn, "login_required", "The sign-in is older than max_age allows.");
    }
    if (!may_use(c, *s.user, true)) return refuse("access_denied", "This account may not use this application.");
    if (!may_use(c, *s.user, s.mfa)) {
        return ask(Next::SecondFactor, "interaction_required", "This application needs a sign-in with a second factor.");
    }
    const bool consent_wanted = (c.consent && !s.consented) || r.prompt_consent;
    if (consent_wanted && !s.consent_done) {
        return ask(Next::Consent, "consent_required", "The person has not agreed to this application yet.");
    }
    d.next = Next::Issue;
    return d;
}

bool may_use(const Client &c, const User &u, bool mfa) {
    if (u.suspended) return false;
    if (!c.allow.empty() &&
        std::none_of(c.allow.begin(), c.allow.end(), [&](const AccessRule &rule) { return rule.matches(u); })) {
        return false;
    }
    return mfa || !c.require_mfa;
}

bool covers(const ConsentRecord *consent, const AuthorizeRequest &r) {
    if (consent == nullptr || consent->client_id != r.client_id) return false;
    return std::all_of(r.scopes.begin(), r.scopes.end(), [&](const std::string &s) {
        return std::find(consent->scopes.begin(), consent->scopes.end(), s) != consent->scopes.end();
    });
}

ConsentRecord grant_consent(const ConsentRecord *before, const AuthorizeRequest &r, const std::string &user_id,
                            Millis now) {
    ConsentRecord c;
    c.user_id = user_id;
    c.client_id = r.client_id;
    if (before != nullptr && before->client_id == r.client_id && before->user_id == user_id) c.scopes = before->scopes;
    for (const auto &s : r.scopes) {
        if (std::find(c.scopes.begin(), c.scopes.end(), s) == c.scopes.end()) c.scopes.push_back(s);
    }
    c.granted_at = now;
    return c;
}

EndSession parse_end_session(std::string_view query, const Clients &clients, const KeyRing &keys,
                             std::string_view issuer) {
    EndSession e;
    if (query.size() > kMaxQuery) {
        e.bad_hint = true;  // nothing of it is trusted: ask before signing out
        return e;
    }
    const form::Params p = form::Params::parse(query);
    std::optional<IdTokenHint> hint;
    if (const std::string *jwt = p.get("id_token_hint")) {
        hint = read_id_token_hint(*jwt, keys, issuer);
        if (!hint || p.repeated("id_token_hint")) {
            hint.reset();
            e.bad_hint = true;
        }
    }
    if (p.malformed) e.bad_hint = true;
    const std::string *client_id = p.repeated("client_id") ? nullptr : p.get("client_id");
    const Client *client = nullptr;
    if (client_id != nullptr) {
        client = clients.find(*client_id);
        if (hint && hint->client_id != *client_id) client = nullptr;  // the two disagree: trust neither
    } else if (hint) {
        client = clients.find(hint->client_id);
    }
    if (hint) e.subject = hint->subject;
    if (client == nullptr) return e;
    e.client_id = client->id;
    const std::string *uri = p.repeated("post_logout_redirect_uri") ? nullptr : p.get("post_logout_redirect_uri");
    if (uri != nullptr && !p.malformed &&
        std::find(client->post_logout_redirect_uris.begin(), client->post_logout_redirect_uris.end(), *uri) !=
            client->post_logout_redirect_uris.end()) {
        e.redirect_uri = *uri;
        const std::string state = p.value("state");
        if (state.size() <= 1024 && printable(state) && !p.repeated("state")) e.state = state;
    }
    return e;
}

std::string end_session_redirect(const EndSession &e) { return with_params(e.redirect_uri, {{"state", e.state}}); }

std::vector<std::string> amr(SignInMethod method, bool mfa) {
    std::vector<std::string> out;
    switch (method) {
    case SignInMethod::EmailToken: out.emplace_back("otp"); break;
    case SignInMethod::Password: out.emplace_back("pwd"); break;
    case SignInMethod::Passkey: out.emplace_back("hwk"); break;
    case SignInMethod::Provider: break;
    }
    // the second factor is a TOTP or recovery code, except for a passkey, whose user
    // verification is the second factor itself
    if (mfa && method != SignInMethod::Passkey && method != SignInMethod::EmailToken) out.emplace_back("otp");
    if (mfa) out.emplace_back("mfa");
    return out;
}

}  // namespace signin::op
