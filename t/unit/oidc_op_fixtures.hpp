// Shared by the OpenID provider's unit tests (oidc_provider_test.cpp, oidc_grants_test.cpp,
// oidc_id_token_test.cpp): three clients as the directive would declare them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "signin/oidc_provider.hpp"

namespace signin::testing::oidc_op {

inline const std::string kSecret = "0123456789abcdef0123456789abcdef-app";  // 36 characters
// RFC 7636 appendix B
inline const std::string kChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
inline const std::string kVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
// the start of an authorization request of the wiki client
inline const std::string kWiki = "client_id=wiki&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb";

inline op::Client client(std::vector<std::string> words) {
    auto c = op::parse_client(words);
    EXPECT_TRUE(c) << c.error().message;
    return c ? c.value() : op::Client{};
}

// wiki: confidential, two redirect URIs, consent asked; cli: public (PKCE), loopback, no
// consent; ops: confidential, acme.com or role ops, a second factor required (its secret unread).
inline op::Clients registry() {
    op::Clients all;
    auto wiki = client({"wiki", "redirect_uri=https://wiki.example/cb", "redirect_uri=https://wiki.example/cb2?x=1",
                        "secret_file=/etc/wiki.secret"});
    EXPECT_TRUE(op::set_secret(wiki, kSecret + "\n"));
    EXPECT_TRUE(all.add(std::move(wiki)));
    EXPECT_TRUE(all.add(client({"cli", "redirect_uri=http://127.0.0.1:8400/cb", "public", "consent=off"})));
    EXPECT_TRUE(all.add(client({"ops", "redirect_uri=https://ops.example/cb", "secret_file=/x", "require=mfa",
                                "allow=domain:acme.com", "allow=role:ops", "consent=off"})));
    return all;
}

}  // namespace signin::testing::oidc_op
