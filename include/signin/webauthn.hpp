// WebAuthn Level 3 parsing and signature checks (signin_passkeys): what a browser sends when it
// makes a passkey (attestation object, §6.5) and when it uses one (authenticator data, §6.1, and
// a signature), with the client data (§5.8.1) of both. CBOR is read by libcbor, the JSON by
// cJSON, the signatures checked by OpenSSL (ES256 on P-256, EdDSA on Ed25519, RS256 of at least
// 2048 bits). Every input here is untrusted: a malformed one is an Error (InvalidRequest) with a
// sentence that says what is wrong, never a crash (fuzz/fuzz_webauthn.cpp). Nothing here knows
// the store; passkeys.hpp applies the ceremony's rules. Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "signin/types.hpp"

namespace signin::webauthn {

// COSE algorithm identifiers this module accepts (RFC 9053; -257 from the WebAuthn registry).
constexpr int kES256 = -7;
constexpr int kEdDSA = -8;
constexpr int kRS256 = -257;

// Authenticator data (§6.1): the flags and the counter, and for a registration the credential.
struct AuthenticatorData {
    std::string rp_id_hash;  // 32 bytes: SHA-256 of the RP ID the authenticator signed for
    std::uint8_t flags = 0;
    std::uint32_t sign_count = 0;
    std::string aaguid;         // attested credential data (AT flag): 16 bytes
    std::string credential_id;  // 1..1023 bytes
    std::string public_key;     // the COSE_Key, its CBOR bytes as sent
    bool user_present() const { return (flags & 0x01) != 0; }
    bool user_verified() const { return (flags & 0x04) != 0; }
    bool backup_eligible() const { return (flags & 0x08) != 0; }
    bool backed_up() const { return (flags & 0x10) != 0; }
    bool attested() const { return (flags & 0x40) != 0; }
};
Result<AuthenticatorData> parse_authenticator_data(std::string_view raw);

// The attestation object (§6.5): {fmt, attStmt, authData}. The statement is not judged (the
// options ask for attestation "none"; trust never comes from it).
struct Attestation {
    std::string fmt;
    std::string auth_data_raw;
    AuthenticatorData auth_data;
};
Result<Attestation> parse_attestation_object(std::string_view raw);

// The client data (§5.8.1): type "webauthn.create" or "webauthn.get", the challenge (decoded
// from base64url), the origin, crossOrigin.
struct ClientData {
    std::string type;
    std::string challenge;
    std::string origin;
    bool cross_origin = false;
};
Result<ClientData> parse_client_data(std::string_view json);

// A COSE_Key (RFC 9052 §7) this module accepts: its algorithm, or why not.
Result<int> check_public_key(std::string_view cose_key);
// Whether sig is cose_key's signature of data (ES256: DER; EdDSA: 64 bytes; RS256: PKCS#1 v1.5).
bool verify_signature(std::string_view cose_key, std::string_view data, std::string_view sig);
// SHA-256.
std::string sha256(std::string_view data);

// A request body {"credential": PublicKeyCredential, "name"?: string} (name: registration only;
// a sign-in may say "add"?: bool, to keep the browser's other accounts),
// the credential in its JSON form (what PublicKeyCredential.toJSON() gives): {id, rawId, type:
// "public-key", response: {clientDataJSON, attestationObject} (registration) or {clientDataJSON,
// authenticatorData, signature, userHandle} (sign-in)}, every binary member base64url. Other
// members a browser adds (authenticatorAttachment, clientExtensionResults, transports, ...) are
// ignored. The binary members decoded.
struct Credential {
    std::string id;  // the credential id (rawId, which must equal id)
    std::string client_data_json;
    std::string attestation_object;  // registration
    std::string authenticator_data;  // sign-in
    std::string signature;           // sign-in
    std::string user_handle;         // sign-in: required for a discoverable credential
    std::string name;                // registration: the name the person gave it (at most 64 bytes)
    bool add = false;                // sign-in: add the account to the browser's
};
Result<Credential> parse_credential_body(std::string_view body, bool registration);

}  // namespace signin::webauthn
