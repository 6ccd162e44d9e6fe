// The browsers and apps an account was signed in from (signin_new_signin_notice), so that a
// sign-in from one it has not seen before can be told to the account's owner.
//
// A browser is known by a cookie (Engine::known_cookie_name): 32 random bytes, long-lived, that
// the module sets at every cookie sign-in. The store keeps only its digest, in a bounded set per
// account: the newest kMaxKnown by last use, the one used longest ago dropped for a new one, the
// whole set forgotten kKeepKnown after the account's last sign-in. The set is kept as one of the
// store's counters (small state with an expiry, in both stores, purged when it expires), under
// known_key(user id), and it is read and written in the transaction of the session it is checked
// for: two sign-ins at once, on two workers or two nodes, cannot both take one browser for new
// and neither for known.
//
// A value the browser brings that this account has not seen is taken as it is rather than
// replaced, so that one browser signed in to several accounts keeps one value for all of them.
// A value made up by anyone counts as known for no account: the notice goes out. Someone who can
// set cookies for the site (its own scripts) could plant a value they also hold; the cookie is
// __Host- prefixed on https so that no other host can.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/types.hpp"

namespace signin {

class WriteTxn;

inline constexpr std::size_t kMaxKnown = 32;
inline constexpr Millis kKeepKnown = 400LL * 24 * 3600 * 1000;  // as long as a browser keeps a cookie

struct KnownBrowser {
    std::string hash;  // secret_hash of the cookie's value, 32 bytes
    Millis last_at = 0;
};

// The counter key of an account's set.
std::string known_key(std::string_view user_id);
// The set as a counter's state: a version byte, then each browser's digest and its last use
// (8 bytes, big endian); and back. nullopt: not such a state (read as an empty set).
std::string encode_known(const std::vector<KnownBrowser> &set);
std::optional<std::vector<KnownBrowser>> decode_known(std::string_view state);

// What one sign-in made of the set.
struct KnownOutcome {
    bool notify = false;  // a browser or app the account has not seen, and not its first sign-in
    Secret cookie;        // the cookie to set (a cookie sign-in): the value brought, or a new one
};

// Checks and records the browser of one sign-in of `user_id` in txn (the caller commits).
// `cookie`: the value the browser brought (empty: none; nullptr: not a browser, a bearer
// sign-in, which is always from an app the account has not seen). An account whose set does not
// exist yet (its first sign-in, or the first since the notice was turned on or since it was
// forgotten) is told nothing.
KnownOutcome note_sign_in_browser(WriteTxn &txn, std::string_view user_id, const Secret *cookie, Millis now);

}  // namespace signin
