// OpenID Connect, the provider's side (oidc_provider.hpp): codes, access tokens, refresh token
// families, and the token request.
#include <sodium.h>

#include <algorithm>
#include <cstring>

#include "encoding.hpp"
#include "form.hpp"
#include "signin/json.hpp"
#include "signin/oidc_provider.hpp"
#include "text.hpp"

namespace signin::op {
namespace {

bool equal_ct(std::string_view a, std::string_view b) {
    return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

TokenError token_error(const char *error, std::string description, int status = 400, bool basic = false) {
    TokenError e;
    e.error = error;
    e.description = std::move(description);
    e.status = status;
    e.basic_challenge = basic;
    return e;
}

TokenError invalid_grant(const char *why) { return token_error("invalid_grant", why); }

bool has(const std::vector<std::string> &list, std::string_view s) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

// The client's id and secret of an HTTP Basic Authorization value (RFC 6749 §2.3.1: each
// form-encoded before the two are joined by ":").
bool basic_credentials(std::string_view header, std::string &id, Secret &secret) {
    if (header.size() < 6 || !text::equals_lowercase(header.substr(0, 6), "basic ")) return false;
    std::string_view b64 = text::trim(header.substr(6), " ");
    if (b64.empty() || b64.size() > 2048) return false;
    std::string raw(b64.size(), '\0');
    std::size_t len = 0;
    if (sodium_base642bin(reinterpret_cast<unsigned char *>(raw.data()), raw.size(), b64.data(), b64.size(), nullptr,
                          &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0) {
        sodium_memzero(raw.data(), raw.size());
        return false;
    }
    raw.resize(len);
    const auto colon = raw.find(':');
    bool ok = false;
    if (colon != std::string::npos) {
        auto user = form::decode(std::string_view(raw).substr(0, colon));
        auto pass = form::decode(std::string_view(raw).substr(colon + 1));
        if (user && pass) {
            id = std::move(*user);
            secret = Secret(std::move(*pass));
            ok = true;
        }
        if (pass) sodium_memzero(pass->data(), pass->size());
    }
    sodium_memzero(raw.data(), raw.size());
    return ok;
}

bool unreserved(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

// The client's credentials of a token or revocation request: HTTP Basic, or client_id and
// client_secret in the body, or a client_id alone (a public client); never two ways at once.
std::optional<TokenError> read_credentials(const form::Params &p, std::string_view authorization, ClientCredentials &t) {
    const std::string *body_id = p.get("client_id");
    const std::string *body_secret = p.get("client_secret");
    if (!authorization.empty()) {
        if (authorization.size() < 6 || !text::equals_lowercase(authorization.substr(0, 6), "basic ")) {
            return token_error("invalid_client", "Only HTTP Basic client authentication is supported.", 401, true);
        }
        if (body_secret != nullptr) return token_error("invalid_request", "The client authenticates in more than one way.");
        if (!basic_credentials(authorization, t.client_id, t.client_secret)) {
            return token_error("invalid_client", "The Authorization header is not well formed.", 401, true);
        }
        if (body_id != nullptr && *body_id != t.client_id) {
            return token_error("invalid_request", "client_id differs from the authenticated client.");
        }
        t.auth = ClientAuth::Basic;
    } else if (body_secret != nullptr) {
        if (body_id == nullptr) return token_error("invalid_request", "client_secret without a client_id.");
        t.client_id = *body_id;
        t.client_secret = Secret(*body_secret);
        t.auth = ClientAuth::Post;
    } else if (body_id != nullptr) {
        t.client_id = *body_id;
    } else {
        return token_error("invalid_client", "The request names no client.", 401);
    }
    if (t.client_id.empty() || t.client_id.size() > 64) {
        return token_error("invalid_client", "Unknown client.", 401, t.auth == ClientAuth::Basic);
    }
    return std::nullopt;
}

}  // namespace

std::string token_error_json(const TokenError &e) {
    json::Writer w;
    w.begin_object().key("error").value(e.error);
    if (!e.description.empty()) w.key("error_description").value(e.description);
    w.end_object();
    return w.take();
}

// ---------------------------------------------------------------- PKCE

std::string pkce_challenge(std::string_view verifier) {
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char *>(verifier.data()), verifier.size());
    return enc::base64url(digest, sizeof digest);
}

bool pkce_matches(std::string_view verifier, std::string_view challenge) {
    // RFC 7636 §4.1: 43 to 128 unreserved characters
    if (verifier.size() < 43 || verifier.size() > 128 || !std::all_of(verifier.begin(), verifier.end(), unreserved)) {
        return false;
    }
    return !challenge.empty() && equal_ct(pkce_challenge(verifier), challenge);
}

// ---------------------------------------------------------------- the token request

std::variant<TokenRequest, TokenError> parse_token_request(std::string_view body, std::string_view authorization) {
    if (body.size() > kMaxTokenBody) return token_error("invalid_request", "The request is too long.");
    const form::Params p = form::Params::parse(body);
    if (p.malformed) return token_error("invalid_request", "The request body is not well formed.");
    if (!p.duplicate.empty()) return token_error("invalid_request", "The request names " + p.duplicate_shown() + " twice.");
    TokenRequest t;
    const std::string *grant = p.get("grant_type");
    if (grant == nullptr) return token_error("invalid_request", "The request has no grant_type.");
    if (*grant == "authorization_code") {
        t.grant = Grant::AuthorizationCode;
    } else if (*grant == "refresh_token") {
        t.grant = Grant::RefreshToken;
    } else {
        return token_error("unsupported_grant_type", "Only authorization_code and refresh_token are supported.");
    }

    if (auto e = read_credentials(p, authorization, t)) return *e;
    if (t.grant == Grant::AuthorizationCode) {
        const std::string *code = p.get("code");
        const std::string *redirect_uri = p.get("redirect_uri");
        if (code == nullptr) return token_error("invalid_request", "The request has no code.");
        if (redirect_uri == nullptr) return token_error("invalid_request", "The request has no redirect_uri.");
        t.code = Secret(*code);
        t.redirect_uri = *redirect_uri;
        if (const std::string *verifier = p.get("code_verifier")) t.code_verifier = Secret(*verifier);
    } else {
        const std::string *refresh = p.get("refresh_token");
        if (refresh == nullptr) return token_error("invalid_request", "The request has no refresh_token.");
        t.refresh_token = Secret(*refresh);
        if (const std::string *scope = p.get("scope")) t.scope = *scope;
    }
    return t;
}

std::variant<RevokeRequest, TokenError> parse_revoke_request(std::string_view body, std::string_view authorization) {
    if (body.size() > kMaxTokenBody) return token_error("invalid_request", "The request is too long.");
    const form::Params p = form::Params::parse(body);
    if (p.malformed) return token_error("invalid_request", "The request body is not well formed.");
    if (!p.duplicate.empty()) return token_error("invalid_request", "The request names " + p.duplicate_shown() + " twice.");
    RevokeRequest r;
    if (auto e = read_credentials(p, authorization, r)) return *e;
    const std::string *token = p.get("token");
    if (token == nullptr) return token_error("invalid_request", "The request has no token.");
    r.token = Secret(*token);
    const std::string hint = p.value("token_type_hint");
    if (hint == "access_token" || hint == "refresh_token") r.hint = hint;
    return r;
}

std::variant<const Client *, TokenError> authenticate(const ClientCredentials &t, const Clients &clients) {
    const bool basic = t.auth == ClientAuth::Basic;
    const Client *c = clients.find(t.client_id);
    if (c == nullptr) return token_error("invalid_client", "Unknown client.", 401, basic);
    if (c->is_public) {
        // a public client has nothing to authenticate with; one that sends a secret is confused
        if (t.auth != ClientAuth::None) return token_error("invalid_client", "A public client has no secret.", 401, basic);
        return c;
    }
    if (t.auth == ClientAuth::None) return token_error("invalid_client", "The client must authenticate.", 401);
    if (!secret_matches(*c, t.client_secret.reveal())) {
        return token_error("invalid_client", "The client's credentials are wrong.", 401, basic);
    }
    return c;
}

// ---------------------------------------------------------------- codes

CodeRecord new_code(const AuthorizeRequest &r, const std::string &user_id, Millis auth_time, SignInMethod method,
                    bool mfa, std::string key, Millis now, Millis ttl) {
    CodeRecord c;
    c.key = std::move(key);
    c.client_id = r.client_id;
    c.redirect_uri = r.redirect_uri;
    c.code_challenge = r.code_challenge;
    c.user_id = user_id;
    c.auth_time = auth_time;
    c.amr = amr(method, mfa);
    c.mfa = mfa;
    c.nonce = r.nonce;
    c.scopes = r.scopes;
    c.created_at = now;
    c.expires_at = now + ttl;
    return c;
}

CodeCheck check_code(const CodeRecord *code, const TokenRequest &t, const Client &client, Millis now) {
    CodeCheck out;
    auto invalid = [&](const char *why) {
        out.outcome = CodeOutcome::Invalid;
        out.error = invalid_grant(why);
        return out;
    };
    if (t.grant != Grant::AuthorizationCode || code == nullptr) return invalid("The code is not valid.");
    if (code->spent) {
        // RFC 6749 §4.1.2: a code used twice revokes what it gave the first time
        out.outcome = CodeOutcome::Reused;
        out.error = invalid_grant("The code was used already.");
        return out;
    }
    if (code->expires_at <= now) return invalid("The code has expired.");
    if (code->client_id != client.id) return invalid("The code was given to another client.");
    if (code->redirect_uri != t.redirect_uri) return invalid("The redirect_uri is not the one the code was given for.");
    if (code->code_challenge.empty()) {
        // RFC 9700 §2.1.1: a verifier for a code that had no challenge is a downgrade attempt
        if (!t.code_verifier.empty()) return invalid("The code had no code_challenge.");
    } else {
        if (t.code_verifier.empty()) return invalid("The code_verifier is missing.");
        if (!pkce_matches(t.code_verifier.reveal(), code->code_challenge)) {
            return invalid("The code_verifier does not match the code_challenge.");
        }
    }
    out.outcome = CodeOutcome::Ok;
    return out;
}

// ---------------------------------------------------------------- refresh token families

std::optional<RefreshFamily> new_family(const CodeRecord &code, std::string id, Millis now) {
    if (!has(code.scopes, "offline_access")) return std::nullopt;
    RefreshFamily f;
    f.id = std::move(id);
    f.client_id = code.client_id;
    f.user_id = code.user_id;
    f.scopes = code.scopes;
    f.auth_time = code.auth_time;
    f.amr = code.amr;
    f.mfa = code.mfa;
    f.generation = 1;
    f.created_at = now;
    f.expires_at = now + kFamilyTtl;
    f.last_used_at = now;
    return f;
}

RefreshTokenRecord refresh_token_record(const RefreshFamily &f, std::string key, Millis now) {
    RefreshTokenRecord r;
    r.key = std::move(key);
    r.family_id = f.id;
    r.generation = f.generation;
    r.expires_at = std::min(now + kRefreshIdle, f.expires_at);
    return r;
}

RefreshCheck use_refresh(const RefreshTokenRecord *token, RefreshFamily *family, const TokenRequest &t,
                         const Client &client, Millis now) {
    RefreshCheck out;
    auto invalid = [&](const char *why) {
        out.outcome = RefreshOutcome::Invalid;
        out.error = invalid_grant(why);
        return out;
    };
    if (t.grant != Grant::RefreshToken || token == nullptr || family == nullptr || token->family_id != family->id) {
        return invalid("The refresh token is not valid.");
    }
    if (family->revoked) return invalid("The refresh token was revoked.");
    if (family->client_id != client.id) return invalid("The refresh token was given to another client.");
    if (token->generation != family->generation) {
        // an older token of the family came back: it was copied; nobody keeps the family
        family->revoked = true;
        out.outcome = RefreshOutcome::Reused;
        out.error = invalid_grant("The refresh token was used already.");
        return out;
    }
    if (family->expires_at <= now || token->expires_at <= now) return invalid("The refresh token has expired.");
    // RFC 6749 §6: a narrower scope may be asked for, never a wider one
    std::vector<std::string> scopes;
    if (t.scope.empty()) {
        scopes = family->scopes;
    } else {
        std::vector<std::string_view> asked;
        std::string_view rest = t.scope;
        while (!rest.empty()) {
            const auto sp = rest.find(' ');
            const std::string_view one = rest.substr(0, sp);
            rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
            if (one.empty()) continue;
            if (!has(family->scopes, one)) {
                out.outcome = RefreshOutcome::Invalid;
                out.error = token_error("invalid_scope", "The scope is wider than the one granted.");
                return out;
            }
            asked.push_back(one);
        }
        for (const auto &s : family->scopes) {
            if (std::find(asked.begin(), asked.end(), s) != asked.end()) scopes.push_back(s);
        }
    }
    family->generation += 1;
    family->last_used_at = now;
    out.outcome = RefreshOutcome::Rotate;
    out.scopes = std::move(scopes);
    return out;
}

AccessTokenRecord new_access_token(std::string key, const std::string &client_id, const std::string &user_id,
                                   const std::vector<std::string> &scopes, const std::string &family_id, Millis now,
                                   Millis ttl) {
    AccessTokenRecord a;
    a.key = std::move(key);
    a.client_id = client_id;
    a.user_id = user_id;
    a.scopes = scopes;
    a.family_id = family_id;
    a.created_at = now;
    a.expires_at = now + ttl;
    return a;
}

std::string token_response(std::string_view access_token, Millis expires_in, std::string_view id_token,
                           std::string_view refresh_token, const std::vector<std::string> &scopes) {
    std::string scope;
    for (const auto &s : scopes) {
        if (!scope.empty()) scope += ' ';
        scope += s;
    }
    json::Writer w;
    w.begin_object()
        .key("access_token").value(access_token)
        .key("token_type").value("Bearer")
        .key("expires_in").value(static_cast<std::int64_t>(expires_in / 1000));
    if (!id_token.empty()) w.key("id_token").value(id_token);
    if (!refresh_token.empty()) w.key("refresh_token").value(refresh_token);
    w.key("scope").value(scope).end_object();
    return w.take();
}

}  // namespace signin::op
