// WebAuthn's data structures (webauthn.hpp): CBOR by libcbor, JSON by cJSON, signatures by
// OpenSSL. Each parser checks every length against what is left and owns what it allocates.
#include "signin/webauthn.hpp"

#include <cbor.h>
#include <cjson/cJSON.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <memory>
#include <optional>
#include <vector>

#include "encoding.hpp"
#include "signin/json.hpp"
#include "public_key.hpp"

namespace signin::webauthn {
namespace {

Error bad(std::string why) { return Error{Code::InvalidRequest, std::move(why)}; }

struct CborFree {
    void operator()(cbor_item_t *i) const { cbor_decref(&i); }
};
using CborItem = std::unique_ptr<cbor_item_t, CborFree>;

// Before libcbor builds anything: the first item of raw walked header by header with libcbor's
// streaming decoder (no allocation), refusing what WebAuthn never sends and what would make the
// builder allocate for a length the input cannot hold: a collection counting more items than
// bytes left, nesting deeper than 8, indefinite lengths, tags. Its length, or nullopt.
struct Walk {
    std::vector<std::uint64_t> left;  // items still to come in each open collection
    std::uint64_t opened = 0;         // a collection opened by the last header (its item count)
    bool container = false, bad = false;
};
void on_collection(void *w, std::size_t n) {
    static_cast<Walk *>(w)->container = true;
    static_cast<Walk *>(w)->opened = n;
}
void on_map(void *w, std::size_t n) {
    on_collection(w, n);
    static_cast<Walk *>(w)->opened = static_cast<std::uint64_t>(n) * 2;
}
void refuse(void *w) { static_cast<Walk *>(w)->bad = true; }
void refuse_tag(void *w, std::uint64_t) { static_cast<Walk *>(w)->bad = true; }

std::optional<std::size_t> well_formed(std::string_view raw) {
    cbor_callbacks cb = cbor_empty_callbacks;
    cb.array_start = on_collection;
    cb.map_start = on_map;
    cb.indef_array_start = refuse;
    cb.indef_map_start = refuse;
    cb.byte_string_start = refuse;
    cb.string_start = refuse;
    cb.indef_break = refuse;
    cb.tag = refuse_tag;
    Walk w;
    std::size_t at = 0;
    do {
        w.container = false;
        const cbor_decoder_result r = cbor_stream_decode(reinterpret_cast<cbor_data>(raw.data() + at), raw.size() - at, &cb, &w);
        if (r.status != CBOR_DECODER_FINISHED || w.bad || r.read == 0) return std::nullopt;
        at += r.read;
        if (!w.left.empty()) --w.left.back();
        if (w.container && w.opened > 0) {
            if (w.opened > raw.size() - at || w.left.size() >= 8) return std::nullopt;
            w.left.push_back(w.opened);
        }
        while (!w.left.empty() && w.left.back() == 0) w.left.pop_back();
    } while (!w.left.empty());
    return at;
}

// One CBOR item from the front of raw; `read` says how many bytes it took.
CborItem load(std::string_view raw, std::size_t &read) {
    auto len = well_formed(raw);
    if (!len) return nullptr;
    raw = raw.substr(0, *len);
    cbor_load_result result{};
    cbor_item_t *item = cbor_load(reinterpret_cast<cbor_data>(raw.data()), raw.size(), &result);
    if (item == nullptr || result.error.code != CBOR_ERR_NONE) {
        if (item != nullptr) cbor_decref(&item);
        return nullptr;
    }
    read = result.read;
    return CborItem(item);
}

std::optional<std::string> text_of(cbor_item_t *i) {
    if (!cbor_isa_string(i) || !cbor_string_is_definite(i)) return std::nullopt;
    return std::string(reinterpret_cast<const char *>(cbor_string_handle(i)), cbor_string_length(i));
}
std::optional<std::string> bytes_of(cbor_item_t *i) {
    if (!cbor_isa_bytestring(i) || !cbor_bytestring_is_definite(i)) return std::nullopt;
    return std::string(reinterpret_cast<const char *>(cbor_bytestring_handle(i)), cbor_bytestring_length(i));
}
// A CBOR integer that fits in an int64 (COSE labels and values are small).
std::optional<std::int64_t> int_of(cbor_item_t *i) {
    if (cbor_isa_uint(i)) {
        std::uint64_t v = cbor_get_int(i);
        if (v > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
        return static_cast<std::int64_t>(v);
    }
    if (cbor_isa_negint(i)) {
        std::uint64_t v = cbor_get_int(i);
        if (v > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
        return -1 - static_cast<std::int64_t>(v);
    }
    return std::nullopt;
}

std::uint32_t be32(const unsigned char *p) {
    return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
           (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
}

// The members of a COSE_Key this module reads, each label at most once.
struct CoseKey {
    std::int64_t kty = 0, alg = 0, crv = 0;
    std::string x, y, n, e;
};

Result<CoseKey> parse_cose(std::string_view raw) {
    std::size_t read = 0;
    CborItem item = load(raw, read);
    if (!item || read != raw.size()) return bad("the public key is not one CBOR item");
    if (!cbor_isa_map(item.get()) || !cbor_map_is_definite(item.get())) return bad("the public key is not a COSE map");
    CoseKey k;
    bool seen[8] = {};
    cbor_pair *pairs = cbor_map_handle(item.get());
    for (std::size_t i = 0; i < cbor_map_size(item.get()); ++i) {
        auto label = int_of(pairs[i].key);
        if (!label) continue;  // text labels: not ours
        const std::int64_t l = *label;
        const int slot = l == 1 ? 0 : l == 3 ? 1 : l == -1 ? 2 : l == -2 ? 3 : l == -3 ? 4 : -1;
        if (slot < 0) continue;
        if (seen[slot]) return bad("the public key repeats a label");
        seen[slot] = true;
        cbor_item_t *v = pairs[i].value;
        if (l == 1 || l == 3) {
            auto n = int_of(v);
            if (!n) return bad("the public key's kty or alg is not an integer");
            (l == 1 ? k.kty : k.alg) = *n;
        } else if (l == -1) {
            if (auto n = int_of(v)) {
                k.crv = *n;
            } else if (auto b = bytes_of(v)) {
                k.n = *b;  // RSA: -1 is n
            } else {
                return bad("the public key's parameter -1 is malformed");
            }
        } else {
            auto b = bytes_of(v);
            if (!b) return bad("the public key's coordinates are not byte strings");
            if (l == -2) {
                k.x = *b;  // RSA: e
                k.e = *b;
            } else {
                k.y = *b;
            }
        }
    }
    if (!seen[0] || !seen[1]) return bad("the public key has no kty or alg");
    return k;
}

using PkeyFree = pkey::Free;
using Pkey = pkey::Ptr;
using pkey::from_params;

// The key and its algorithm, or why not.
Result<std::pair<int, std::shared_ptr<EVP_PKEY>>> to_pkey(std::string_view cose) {
    auto k = parse_cose(cose);
    if (!k) return k.error();
    Pkey pkey;
    if (k->alg == kES256) {
        if (k->kty != 2 || k->crv != 1) return bad("an ES256 key must be an EC2 key on P-256");
        if (k->x.size() != 32 || k->y.size() != 32) return bad("a P-256 key's coordinates are 32 bytes each");
        std::string point = "\x04" + k->x + k->y;
        OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
        if (bld == nullptr) return Error{Code::Internal, "out of memory"};
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
        pkey = from_params("EC", bld);
        OSSL_PARAM_BLD_free(bld);
    } else if (k->alg == kEdDSA) {
        if (k->kty != 1 || k->crv != 6) return bad("an EdDSA key must be an OKP key on Ed25519");
        if (k->x.size() != 32) return bad("an Ed25519 key is 32 bytes");
        pkey = Pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                                reinterpret_cast<const unsigned char *>(k->x.data()), k->x.size()));
    } else if (k->alg == kRS256) {
        if (k->kty != 3) return bad("an RS256 key must be an RSA key");
        if (k->n.size() < 256 || k->n.size() > 1024 || k->e.empty() || k->e.size() > 8) {
            return bad("an RS256 key needs a modulus of 2048 to 8192 bits");
        }
        BIGNUM *n = BN_bin2bn(reinterpret_cast<const unsigned char *>(k->n.data()), static_cast<int>(k->n.size()), nullptr);
        BIGNUM *e = BN_bin2bn(reinterpret_cast<const unsigned char *>(k->e.data()), static_cast<int>(k->e.size()), nullptr);
        OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
        if (n != nullptr && e != nullptr && bld != nullptr) {
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n);
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e);
            pkey = from_params("RSA", bld);
        }
        OSSL_PARAM_BLD_free(bld);
        BN_free(n);
        BN_free(e);
        if (pkey && EVP_PKEY_get_bits(pkey.get()) < 2048) return bad("an RS256 key needs at least 2048 bits");
    } else {
        return bad("the key's algorithm is not one of ES256, EdDSA, RS256");
    }
    if (!pkey) return bad("the public key is not a valid key");
    return std::make_pair(static_cast<int>(k->alg), std::shared_ptr<EVP_PKEY>(pkey.release(), PkeyFree{}));
}

struct JsonFree {
    void operator()(cJSON *j) const { cJSON_Delete(j); }
};

std::optional<std::string> b64_member(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(v) || v->valuestring == nullptr) return std::nullopt;
    return enc::base64url_decode(v->valuestring);
}

}  // namespace

std::string sha256(std::string_view data) {
    unsigned char out[32];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
    return std::string(reinterpret_cast<const char *>(out), 32);
}

Result<AuthenticatorData> parse_authenticator_data(std::string_view raw) {
    if (raw.size() < 37) return bad("the authenticator data is shorter than 37 bytes");
    const auto *p = reinterpret_cast<const unsigned char *>(raw.data());
    AuthenticatorData a;
    a.rp_id_hash = std::string(raw.substr(0, 32));
    a.flags = p[32];
    a.sign_count = be32(p + 33);
    std::size_t at = 37;
    if (a.attested()) {
        if (raw.size() < at + 18) return bad("the attested credential data is truncated");
        a.aaguid = std::string(raw.substr(at, 16));
        const std::size_t len = (static_cast<std::size_t>(p[at + 16]) << 8) | p[at + 17];
        at += 18;
        if (len == 0 || len > 1023) return bad("the credential id must be 1 to 1023 bytes");
        if (raw.size() < at + len) return bad("the credential id is truncated");
        a.credential_id = std::string(raw.substr(at, len));
        at += len;
        std::size_t read = 0;
        CborItem key = load(raw.substr(at), read);
        if (!key) return bad("the credential public key is not CBOR");
        a.public_key = std::string(raw.substr(at, read));
        at += read;
    }
    if ((a.flags & 0x80) != 0) {  // ED: one CBOR map of extensions, to the end
        std::size_t read = 0;
        CborItem ext = load(raw.substr(at), read);
        if (!ext || !cbor_isa_map(ext.get())) return bad("the extensions are not a CBOR map");
        at += read;
    }
    if (at != raw.size()) return bad("the authenticator data has bytes after its end");
    return a;
}

Result<Attestation> parse_attestation_object(std::string_view raw) {
    std::size_t read = 0;
    CborItem item = load(raw, read);
    if (!item || read != raw.size()) return bad("the attestation object is not one CBOR item");
    if (!cbor_isa_map(item.get()) || !cbor_map_is_definite(item.get())) return bad("the attestation object is not a map");
    Attestation out;
    bool fmt = false, stmt = false, data = false;
    cbor_pair *pairs = cbor_map_handle(item.get());
    for (std::size_t i = 0; i < cbor_map_size(item.get()); ++i) {
        auto key = text_of(pairs[i].key);
        if (!key) return bad("the attestation object has a key that is not text");
        if (*key == "fmt") {
            auto v = text_of(pairs[i].value);
            if (!v || fmt) return bad("the attestation object's fmt is malformed");
            out.fmt = *v;
            fmt = true;
        } else if (*key == "attStmt") {
            if (!cbor_isa_map(pairs[i].value) || stmt) return bad("the attestation statement is malformed");
            stmt = true;
        } else if (*key == "authData") {
            auto v = bytes_of(pairs[i].value);
            if (!v || data) return bad("the attestation object's authData is malformed");
            out.auth_data_raw = *v;
            data = true;
        }
    }
    if (!fmt || !stmt || !data) return bad("the attestation object lacks fmt, attStmt or authData");
    auto a = parse_authenticator_data(out.auth_data_raw);
    if (!a) return a.error();
    out.auth_data = std::move(a.value());
    return out;
}

Result<ClientData> parse_client_data(std::string_view json) {
    if (!json::free_of_raw_controls(json)) return bad("the client data is not a JSON object");
    std::unique_ptr<cJSON, JsonFree> root(cJSON_ParseWithLength(json.data(), json.size()));
    if (!root || !cJSON_IsObject(root.get())) return bad("the client data is not a JSON object");
    ClientData c;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root.get(), "type");
    const cJSON *origin = cJSON_GetObjectItemCaseSensitive(root.get(), "origin");
    if (!cJSON_IsString(type) || !cJSON_IsString(origin)) return bad("the client data lacks type or origin");
    auto challenge = b64_member(root.get(), "challenge");
    if (!challenge) return bad("the client data's challenge is not base64url");
    c.type = type->valuestring;
    c.origin = origin->valuestring;
    c.challenge = std::move(*challenge);
    const cJSON *cross = cJSON_GetObjectItemCaseSensitive(root.get(), "crossOrigin");
    if (cross != nullptr && !cJSON_IsBool(cross)) return bad("the client data's crossOrigin is not a boolean");
    c.cross_origin = cJSON_IsTrue(cross);
    return c;
}

Result<int> check_public_key(std::string_view cose_key) {
    auto k = to_pkey(cose_key);
    if (!k) return k.error();
    return k->first;
}

bool verify_signature(std::string_view cose_key, std::string_view data, std::string_view sig) {
    auto k = to_pkey(cose_key);
    if (!k || sig.empty()) return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == nullptr) return false;
    const EVP_MD *md = k->first == kEdDSA ? nullptr : EVP_sha256();
    bool ok = EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, k->second.get()) == 1 &&
              EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char *>(sig.data()), sig.size(),
                               reinterpret_cast<const unsigned char *>(data.data()), data.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

Result<Credential> parse_credential_body(std::string_view body, bool registration) {
    if (!json::free_of_raw_controls(body)) return bad("the body must be a JSON object");
    std::unique_ptr<cJSON, JsonFree> root(cJSON_ParseWithLength(body.data(), body.size()));
    if (!root || !cJSON_IsObject(root.get())) return bad("the body must be a JSON object");
    Credential out;
    const cJSON *cred = nullptr;
    for (const cJSON *m = root->child; m != nullptr; m = m->next) {
        const std::string_view name = m->string ? m->string : "";
        if (name == "credential" && cred == nullptr && cJSON_IsObject(m)) {
            cred = m;
        } else if (!registration && name == "add" && cJSON_IsBool(m)) {
            out.add = cJSON_IsTrue(m);
        } else if (registration && name == "name" && cJSON_IsString(m) && out.name.empty()) {
            out.name = m->valuestring;
            if (out.name.size() > 64) return bad("a passkey's name is at most 64 bytes");
        } else {
            return bad(std::string("unexpected or repeated member \"") + std::string(name.substr(0, 32)) + "\"");
        }
    }
    if (cred == nullptr) return bad("send {\"credential\": ...}, the PublicKeyCredential in its JSON form");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cred, "type");
    if (!cJSON_IsString(type) || std::string_view(type->valuestring) != "public-key") {
        return bad("the credential's type must be \"public-key\"");
    }
    auto id = b64_member(cred, "id");
    auto raw_id = b64_member(cred, "rawId");
    if (!id || id->empty() || (raw_id && *raw_id != *id)) return bad("the credential's id is missing or malformed");
    out.id = std::move(*id);
    const cJSON *response = cJSON_GetObjectItemCaseSensitive(cred, "response");
    if (!cJSON_IsObject(response)) return bad("the credential has no response");
    auto client_data = b64_member(response, "clientDataJSON");
    if (!client_data) return bad("the response's clientDataJSON is missing or not base64url");
    out.client_data_json = std::move(*client_data);
    if (registration) {
        auto att = b64_member(response, "attestationObject");
        if (!att) return bad("the response's attestationObject is missing or not base64url");
        out.attestation_object = std::move(*att);
        return out;
    }
    auto data = b64_member(response, "authenticatorData");
    auto sig = b64_member(response, "signature");
    if (!data || !sig) return bad("the response's authenticatorData or signature is missing or not base64url");
    out.authenticator_data = std::move(*data);
    out.signature = std::move(*sig);
    const cJSON *handle = cJSON_GetObjectItemCaseSensitive(response, "userHandle");
    if (handle != nullptr && !cJSON_IsNull(handle)) {
        auto h = b64_member(response, "userHandle");
        if (!h) return bad("the response's userHandle is not base64url");
        out.user_handle = std::move(*h);
    }
    return out;
}

}  // namespace signin::webauthn
