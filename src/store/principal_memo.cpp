// PrincipalMemo and ThreadMemos (principal_memo.hpp).
#include "principal_memo.hpp"

#include <atomic>
#include <cstring>

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

namespace {
std::atomic<std::uint64_t> g_memos_made{0};
}  // namespace

ThreadMemos::ThreadMemos(std::size_t slots) : serial_(++g_memos_made), slots_(slots) {}

// A thread that reads through this store for the first time, or again after reading through
// another one: its memo of this store, made when it has none yet.
PrincipalMemo &ThreadMemos::find_or_make() {
    const std::thread::id me = std::this_thread::get_id();
    std::lock_guard<std::mutex> hold(lock_);
    PrincipalMemo *memo = nullptr;
    for (auto &[thread, m] : memos_) {
        if (thread == me) memo = m.get();
    }
    if (memo == nullptr) {
        memos_.emplace_back(me, std::make_unique<PrincipalMemo>(slots_));
        memo = memos_.back().second.get();
    }
    t_last = {serial_, memo};
    return *memo;
}

}  // namespace signin
