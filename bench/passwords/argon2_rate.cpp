// Argon2id rate with the module's settings (libsodium, t=2, m=19456 KiB, p=1): how many
// crypto_pwhash_str_verify calls complete per second, on one thread (the single-core rate) or on
// N threads of one process at once (argv[2]).
#include <sodium.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
    if (sodium_init() < 0) return 1;
    const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
    const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
    const char *pw = "violet tractor hums quietly";
    char phc[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str_alg(phc, pw, 27, 2, 19456 * 1024, crypto_pwhash_ALG_ARGON2ID13) != 0) return 1;
    using clock = std::chrono::steady_clock;
    std::atomic<long> total{0};
    std::atomic<bool> failed{false};
    auto start = clock::now();
    auto work = [&] {
        long n = 0;
        while (std::chrono::duration<double>(clock::now() - start).count() < seconds) {
            if (crypto_pwhash_str_verify(phc, pw, 27) != 0) failed = true;
            ++n;
        }
        total += n;
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(work);
    for (auto &t : pool) t.join();
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (failed) return 1;
    std::printf("%.2f\n", static_cast<double>(total.load()) / elapsed);
    return 0;
}
