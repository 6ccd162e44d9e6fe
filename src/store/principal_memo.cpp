// PrincipalMemo (principal_memo.hpp), and a ReadTxn's principal() for stores that have no
// in-place read of their own.
#include "signin/principal_memo.hpp"

#include <cstdint>
#include <cstring>

#include "signin/store.hpp"

namespace signin {

PrincipalMemo::PrincipalMemo(std::size_t slots) {
    std::size_t n = 1;
    while (n < slots) n <<= 1;
    slots_.resize(n);
}

// A session key ends with a digest (record_key: BLAKE2b of the secret, after its 6-byte time
// head on a current key), so its last bytes spread entries evenly over the slots.
std::size_t PrincipalMemo::index(std::string_view key) const {
    std::uint32_t h = 0;
    if (key.size() >= 4) {
        std::memcpy(&h, key.data() + key.size() - 4, 4);
    } else {
        for (char c : key) h = (h << 8) | static_cast<unsigned char>(c);
    }
    return h & (slots_.size() - 1);
}

const std::shared_ptr<const Principal> *PrincipalMemo::find(std::string_view key, std::string_view session_bytes) const {
    const Slot &s = slots_[index(key)];
    if (!s.principal || s.key != key || s.session != session_bytes) return nullptr;
    return &s.principal;
}

bool PrincipalMemo::user_matches(std::string_view key, std::string_view user_bytes) const {
    const Slot &s = slots_[index(key)];
    return s.principal && s.key == key && s.user == user_bytes;
}

void PrincipalMemo::put(std::string_view key, std::string_view session_bytes, std::string_view user_bytes,
                        std::shared_ptr<const Principal> p) {
    Slot &s = slots_[index(key)];
    s.key.assign(key);  // assign: a slot reuses its strings' capacity
    s.session.assign(session_bytes);
    s.user.assign(user_bytes);
    s.principal = std::move(p);
}

std::shared_ptr<const Principal> ReadTxn::principal(std::string_view key, PrincipalMemo *) {
    auto s = session(key);
    if (!s) return nullptr;
    auto u = user_by_id(s->user_id);
    if (!u) return nullptr;
    return std::make_shared<const Principal>(Principal{std::move(*u), std::move(*s)});
}

}  // namespace signin
