// OpenSSL public keys made from their parameters (public_key.hpp).
#include "public_key.hpp"

namespace signin::pkey {

Ptr from_params(const char *type, OSSL_PARAM_BLD *bld) {
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
    EVP_PKEY *pkey = nullptr;
    if (params == nullptr || ctx == nullptr || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        pkey = nullptr;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    if (pkey == nullptr) return nullptr;
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr);
    const bool ok = check != nullptr && EVP_PKEY_public_check(check) == 1;
    EVP_PKEY_CTX_free(check);
    if (!ok) {
        EVP_PKEY_free(pkey);
        return nullptr;
    }
    return Ptr(pkey);
}

}  // namespace signin::pkey
