// libFuzzer: the decoders of the store's records. A damaged or foreign LMDB file is untrusted
// input: every decoder must refuse (StoreError) or decode, never read out of bounds; and what the
// binary decoders accept is exactly what the encoders write (re-encoding gives the same bytes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/records.hpp"

namespace r = signin::records;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char *>(data), size);
    const std::string_view key = in.substr(0, std::min<std::size_t>(16, in.size()));
    try {
        signin::User u = r::decode_user(in);
        // an older format is re-encoded in the newest: only the newest must round-trip exactly
        if (!in.empty() && in[0] == static_cast<char>(r::kUserFormat) && r::encode_user(u) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        signin::TokenRecord t = r::decode_token(key, in);
        if (!in.empty() && in[0] == static_cast<char>(r::kTokenFormat) && r::encode_token(t) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        signin::SessionRecord s = r::decode_session(key, in);
        if (!in.empty() && in[0] == static_cast<char>(r::kSessionFormat) && r::encode_session(s) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        // the outbox key is 16 bytes; the record follows it in the input
        if (in.size() >= 16) {
            const std::string_view record = in.substr(16);
            signin::OutboxRecord o = r::decode_outbox(key, record);
            if (!record.empty() && record[0] == static_cast<char>(r::kOutboxFormat) && r::encode_outbox(o) != record) {
                __builtin_trap();
            }
        }
    } catch (const signin::StoreError &) {
    }
    try {
        // an event's key is 8 bytes (its sequence number); the record follows it in the input
        if (in.size() >= 8) {
            signin::EventRecord e = r::decode_event(in.substr(0, 8), in.substr(8));
            if (r::encode_event(e) != in.substr(8)) __builtin_trap();
            // the sender's partial reading agrees with the whole one
            signin::EventHead h = r::decode_event_head(in.substr(0, 8), in.substr(8));
            if (h.key != e.key || h.user_id != e.user_id || h.due_at != e.due_at || h.attempts != e.attempts) __builtin_trap();
        }
    } catch (const signin::StoreError &) {
    }
    try {  // and refuses what the whole one refuses
        if (in.size() >= 8) {
            (void)r::decode_event_head(in.substr(0, 8), in.substr(8));
            (void)r::decode_event(in.substr(0, 8), in.substr(8));
        }
    } catch (const signin::StoreError &) {
        bool refused = false;
        try {
            (void)r::decode_event(in.substr(0, 8), in.substr(8));
        } catch (const signin::StoreError &) {
            refused = true;
        }
        if (!refused) __builtin_trap();
    }
    try {  // the OpenID provider's grants
        if (r::encode_oidc_code(r::decode_oidc_code(key, in)) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        if (r::encode_oidc_access(r::decode_oidc_access(key, in)) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        if (r::encode_oidc_refresh(r::decode_oidc_refresh(key, in)) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        if (r::encode_oidc_family(r::decode_oidc_family(key, in)) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        signin::MfaRecord m = r::decode_mfa(key, in);
        if (!in.empty() && in[0] == static_cast<char>(r::kMfaFormat) && r::encode_mfa(m) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        signin::MfaPendingRecord p = r::decode_mfa_pending(key, in);
        if (!in.empty() && in[0] == static_cast<char>(r::kPendingFormat) && r::encode_mfa_pending(p) != in) {
            __builtin_trap();
        }
    } catch (const signin::StoreError &) {
    }
    try {
        signin::PasskeyRecord k = r::decode_passkey(key, in);
        if (r::encode_passkey(k) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        signin::ProviderLinkRecord l = r::decode_provider_link(key, in);
        if (r::encode_provider_link(l) != in) __builtin_trap();
    } catch (const signin::StoreError &) {
    }
    try {
        (void)r::decode_audit(key, in);
    } catch (const signin::StoreError &) {
    }
    return 0;
}
