// libFuzzer: the OpenID provider's authorization request (oidc_provider.hpp), a query string
// anyone can send to /oauth2/authorize. Besides never crashing, reading out of bounds or leaking:
// an accepted request names a registered client and one of its own redirect URIs, asks for
// "openid", and carries an S256 challenge whenever the client is public; a refusal that goes back
// to a redirect URI goes back only to a registered one, and its URL starts with it; error codes
// and descriptions hold only the characters RFC 6749 allows them. The same input as an
// end_session query sends the browser back only to a registered post_logout_redirect_uri; as the
// consent page's form body, an accepted form holds a query no longer than an authorization
// request may be, and the consent page made from it carries no markup of the input's, in English
// and in the translations (German, and Arabic written right to left).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "signin/oidc_issuer.hpp"
#include "signin/oidc_provider.hpp"

namespace {

const signin::op::Clients &clients() {
    static const signin::op::Clients all = [] {
        signin::op::Clients c;
        auto wiki = signin::op::parse_client({"wiki", "redirect_uri=https://wiki.example/cb",
                                              "redirect_uri=https://wiki.example/cb?x=1", "secret_file=/s",
                                              "post_logout_redirect_uri=https://wiki.example/bye"});
        auto cli = signin::op::parse_client({"cli", "redirect_uri=http://127.0.0.1:8400/cb", "public"});
        if (!wiki || !cli || !c.add(wiki.value()) || !c.add(cli.value())) __builtin_trap();
        return c;
    }();
    return all;
}

const signin::op::KeyRing &ring() {
    static const signin::op::KeyRing keys = [] {
        signin::op::KeyRing r;
        auto k = signin::op::SigningKey::generate(signin::op::Alg::ES256);
        if (!k) __builtin_trap();
        r.add(std::make_shared<const signin::op::SigningKey>(std::move(k.value())));
        return r;
    }();
    return keys;
}

const signin::i18n::Languages &languages() {
    static const std::shared_ptr<const signin::i18n::Languages> all = [] {
        auto l = signin::i18n::Languages::make({"en", "de", "ar"});
        if (!l) __builtin_trap();
        return l.value();
    }();
    return *all;
}

bool registered(const signin::op::Client *c, std::string_view uri) {
    return c != nullptr && std::find(c->redirect_uris.begin(), c->redirect_uris.end(), uri) != c->redirect_uris.end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    namespace op = signin::op;
    std::string_view query(reinterpret_cast<const char *>(data), size);
    // the same query as an end_session request: it redirects only to a registered URI
    const op::EndSession end = op::parse_end_session(query, clients(), ring(), "https://id.example");
    if (!end.redirect_uri.empty()) {
        const op::Client *c = clients().find(end.client_id);
        if (c == nullptr || std::find(c->post_logout_redirect_uris.begin(), c->post_logout_redirect_uris.end(),
                                      end.redirect_uri) == c->post_logout_redirect_uris.end()) {
            __builtin_trap();
        }
    }
    // the same bytes as the consent page's form body
    if (auto form = signin::parse_consent_form(query)) {
        if (form->query.size() > op::kMaxQuery) __builtin_trap();
        signin::User u;
        u.email = form->query;
        op::AuthorizeRequest r;
        r.client_id = "wiki";
        r.scopes = {"openid", "email"};
        signin::User plain;
        plain.email = "x";
        for (std::size_t lang = 0; lang < languages().size(); lang++) {
            const signin::PageLanguage in{&languages(), lang};
            const std::string page = signin::consent_page(r, u, "site", "/auth/oauth2/authorize", form->query, "", in);
            const std::string bare = signin::consent_page(r, plain, "site", "/auth/oauth2/authorize", "", "", in);
            // every '<' and '"' of the input was escaped: the page has the markup of the bare page only
            if (std::count(page.begin(), page.end(), '<') != std::count(bare.begin(), bare.end(), '<') ||
                std::count(page.begin(), page.end(), '"') != std::count(bare.begin(), bare.end(), '"')) {
                __builtin_trap();
            }
        }
    }
    auto a = op::parse_authorize(query, clients());
    if (const auto *r = std::get_if<op::AuthorizeRequest>(&a)) {
        const op::Client *c = clients().find(r->client_id);
        if (!registered(c, r->redirect_uri)) __builtin_trap();
        if (r->scopes.empty() || r->scopes.front() != "openid") __builtin_trap();
        if (c->is_public && r->code_challenge.size() != 43) __builtin_trap();
        const std::string url = op::code_redirect(*r, "code", "https://id.example");
        if (url.rfind(r->redirect_uri, 0) != 0) __builtin_trap();
        signin::User u;
        u.id = "u";
        u.email = "a@b.example";
        op::SignedIn s;
        s.user = &u;
        (void)op::decide(*r, *c, s, 1'800'000'000'000);
    } else {
        const auto &e = std::get<op::AuthorizeError>(a);
        // RFC 6749 §4.1.2.1: what error and error_description may hold
        for (char ch : e.error + e.description) {
            if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\') __builtin_trap();
        }
        if (!e.page) {
            if (!registered(clients().find("wiki"), e.redirect_uri) && !registered(clients().find("cli"), e.redirect_uri)) {
                __builtin_trap();
            }
            if (op::error_redirect(e, "https://id.example").rfind(e.redirect_uri, 0) != 0) __builtin_trap();
        } else if (!e.redirect_uri.empty()) {
            __builtin_trap();
        }
    }
    return 0;
}
