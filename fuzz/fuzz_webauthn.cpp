// libFuzzer: WebAuthn's untrusted inputs (webauthn.hpp): an attestation object, authenticator
// data, a COSE key and client data JSON, and a passkey request body, from one input. Each parser
// answers a value or an error; none may crash, read out of bounds or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signin/webauthn.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char *>(data), size);
    namespace w = signin::webauthn;
    if (auto att = w::parse_attestation_object(in)) {
        // a parsed credential's key goes through the key checks and a signature check
        if (!att->auth_data.public_key.empty() && w::check_public_key(att->auth_data.public_key)) {
            (void)w::verify_signature(att->auth_data.public_key, in, in.substr(0, 72));
        }
        if (att->auth_data.credential_id.size() > 1023) __builtin_trap();
    }
    if (auto a = w::parse_authenticator_data(in)) {
        if (a->rp_id_hash.size() != 32) __builtin_trap();
    }
    (void)w::check_public_key(in);
    (void)w::parse_client_data(in);
    (void)w::parse_credential_body(in, true);
    (void)w::parse_credential_body(in, false);
    return 0;
}
