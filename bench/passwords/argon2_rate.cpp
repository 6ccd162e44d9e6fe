// Single-core Argon2id rate with the module's settings (libsodium, t=2, m=19456 KiB, p=1): how
// many crypto_pwhash_str_verify calls one thread completes per second.
#include <sodium.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    if (sodium_init() < 0) return 1;
    const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
    const char *pw = "violet tractor hums quietly";
    char phc[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str_alg(phc, pw, 27, 2, 19456 * 1024, crypto_pwhash_ALG_ARGON2ID13) != 0) return 1;
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    long n = 0;
    double elapsed = 0;
    do {
        if (crypto_pwhash_str_verify(phc, pw, 27) != 0) return 1;
        ++n;
        elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < seconds);
    std::printf("%.2f\n", n / elapsed);
    return 0;
}
