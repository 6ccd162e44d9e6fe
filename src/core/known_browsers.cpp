// The browsers an account was signed in from (known_browsers.hpp).
#include "signin/known_browsers.hpp"

#include <algorithm>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/store.hpp"

namespace signin {
namespace {

constexpr char kVersion = 1;
constexpr std::size_t kHashBytes = 32;
constexpr std::size_t kEntryBytes = kHashBytes + 8;

}  // namespace

std::string known_key(std::string_view user_id) { return "kb\n" + std::string(user_id); }

std::string encode_known(const std::vector<KnownBrowser> &set) {
    std::string out(1, kVersion);
    out.reserve(1 + set.size() * kEntryBytes);
    for (const auto &b : set) {
        if (b.hash.size() != kHashBytes) continue;
        out.append(b.hash);
        const auto at = static_cast<std::uint64_t>(b.last_at);
        for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((at >> shift) & 0xff));
    }
    return out;
}

std::optional<std::vector<KnownBrowser>> decode_known(std::string_view state) {
    if (state.empty() || state[0] != kVersion || (state.size() - 1) % kEntryBytes != 0) return std::nullopt;
    state.remove_prefix(1);
    std::vector<KnownBrowser> out;
    out.reserve(state.size() / kEntryBytes);
    for (; !state.empty(); state.remove_prefix(kEntryBytes)) {
        KnownBrowser b;
        b.hash.assign(state.substr(0, kHashBytes));
        std::uint64_t at = 0;
        for (std::size_t i = 0; i < 8; i++) at = (at << 8) | static_cast<unsigned char>(state[kHashBytes + i]);
        b.last_at = static_cast<Millis>(at);
        out.push_back(std::move(b));
    }
    return out;
}

KnownOutcome note_sign_in_browser(WriteTxn &txn, std::string_view user_id, const Secret *cookie, Millis now) {
    const std::string key = known_key(user_id);
    const auto state = txn.counter(key);
    auto decoded = state ? decode_known(*state) : std::nullopt;
    const bool seen_before = decoded.has_value();
    std::vector<KnownBrowser> set = decoded ? std::move(*decoded) : std::vector<KnownBrowser>{};
    KnownOutcome out;
    if (cookie == nullptr) {
        out.notify = seen_before;  // an app with a bearer session is never known
    } else {
        std::string value = plausible_secret(cookie->reveal()) ? std::string(cookie->reveal()) : enc::random_secret(32);
        const std::string hash = secret_hash(value);
        auto it = std::find_if(set.begin(), set.end(),
                               [&](const KnownBrowser &b) { return detail::same_digest(b.hash, hash); });
        if (it != set.end()) {
            it->last_at = now;
        } else {
            out.notify = seen_before;
            if (set.size() >= kMaxKnown) {
                set.erase(std::min_element(set.begin(), set.end(), [](const KnownBrowser &a, const KnownBrowser &b) {
                    return a.last_at < b.last_at;
                }));
            }
            set.push_back({hash, now});
        }
        out.cookie = Secret(std::move(value));
    }
    txn.put_counter(key, encode_known(set), now + kKeepKnown);
    return out;
}

}  // namespace signin
