// OpenSSL public keys made from their parameters: the COSE keys of passkeys (webauthn.cpp) and
// the JWKs of OpenID providers (oidc.cpp). Internal to the core.
#pragma once

#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <memory>

namespace signin::pkey {

struct Free {
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
};
using Ptr = std::unique_ptr<EVP_PKEY, Free>;

// A public key of `type` ("RSA", "EC") from the parameters in bld, and checked (the point is on
// its curve, the modulus is sane); nullptr otherwise. bld stays the caller's.
Ptr from_params(const char *type, OSSL_PARAM_BLD *bld);

}  // namespace signin::pkey
