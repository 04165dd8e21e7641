#ifndef BLUELIBRARY_CCRYPTO_SHIM_H
#define BLUELIBRARY_CCRYPTO_SHIM_H
/* libcrypto (OpenSSL 3, Debian libssl-dev): PBKDF2-HMAC, one-shot HMAC and the CSPRNG. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>

/* EVP_sha256 returns a const pointer Swift can pass straight on; wrapped so the Swift side
   does not depend on how OpenSSL declares it. */
static inline const EVP_MD *bl_evp_sha256(void) { return EVP_sha256(); }
#endif
