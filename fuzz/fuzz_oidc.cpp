// libFuzzer: OpenID Connect's untrusted inputs (oidc.hpp), what a provider (or whoever answers in
// its place) sends back: a discovery document, a key set, an ID token checked against a key set,
// a token answer, and a flow cookie. The input is "KEYS\nTOKEN": the part before the first newline
// is also parsed as a key set for the token after it. Each parser answers a value or a refusal;
// none may crash, read out of bounds or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signin/oidc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char *>(data), size);
    namespace o = signin::oidc;
    (void)o::parse_discovery(in, "https://id.example");
    (void)o::parse_discovery(in, "http://127.0.0.1:9");
    (void)o::id_token_of(in);
    (void)o::parse_client_secret(in);
    signin::SecretKey key{};
    (void)o::open_flow(key, in, 0);
    const auto nl = in.find('\n');
    std::string_view jwks = in.substr(0, nl), token = nl == std::string_view::npos ? in : in.substr(nl + 1);
    auto keys = o::KeySet::parse(jwks);
    if (keys) {
        o::Expected e;
        e.issuer = "https://id.example";
        e.client_id = "client-1";
        e.nonce = "n-123";
        e.now = 1'800'000'000'000;
        o::Verified v = o::verify_id_token(token, keys.value(), e);
        // a token that passes carries what was expected
        if (v.refusal == o::Refusal::None && (v.claims.iss != e.issuer || v.claims.sub.empty())) __builtin_trap();
    }
    return 0;
}
