// The outbox (signin_delivery_retries): a transport that delivers apart from the
// visitor's request writes each delivery here, in the same transaction as its token, and sends
// it afterwards; a refused delivery is tried again with a doubling delay, and one that finally
// fails cancels its token. A sender that vanished (a crashed worker, a stopped server) leaves its
// entries to be claimed by another once their hold has passed.
//
// The delivery is sealed (XChaCha20-Poly1305) with a key derived from the secret key file, which
// is never in the store: a copy of the store gives no usable token. Valid C++17: the glue
// includes it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/secret_key.hpp"
#include "signin/types.hpp"

namespace signin {

class Engine;

struct OutboxSettings {
    SecretKey key{};       // the secret key (the outbox uses a subkey derived from it)
    Millis hold = 60000;   // how long a sender holds an entry before another may send it again
    // Sends after the first failure, at most. The default has no count: an email is tried again
    // for as long as what it carries could still be used (its token's lifetime; a notice,
    // kNoticeLifetime), so a mail relay that is down for a while delays a sign-in, it does not
    // lose it.
    unsigned retries = kUntilExpiry;
    static constexpr unsigned kUntilExpiry = ~0u;
};

// How long a notice (an email with no token: a new sign-in, a changed address) is tried again.
inline constexpr Millis kNoticeLifetime = 24 * 3600 * 1000LL;
// The longest wait between two sends of one email (the delay doubles from 1 s up to this).
inline constexpr Millis kMaxRetryDelay = 60000;

// One email waiting to be sent, as a sender holds it.
struct OutboxItem {
    std::string key;     // the outbox entry's current key (it changes when the entry is held again)
    Delivery delivery;
    std::string client;
    std::uint32_t attempts = 1;  // sends started, counting the one about to be made
};

// One email waiting in the outbox, as an operator may see it (signin-admin outbox): no code, no
// token, no body.
struct OutboxEntry {
    std::string email;   // the recipient; empty when the entry does not open under this key
    std::optional<Purpose> purpose;  // likewise
    std::uint32_t attempts = 0;      // sends started
    Millis created_at = 0;
    Millis next_try_at = 0;  // when its holder sends it next
    Millis due_at = 0;       // when another sender may take it over
    std::string last_error;  // why the last send failed; empty before any failure
};

class Outbox {
public:
    explicit Outbox(Engine &engine) : engine_(engine) {}

    // Entries whose sender vanished (hold passed): each is held again by the caller and returned
    // to send, at most `budget`. An entry whose token was spent or expired meanwhile is dropped;
    // one out of attempts, or that cannot be unsealed (the key file changed), is given up.
    Result<std::vector<OutboxItem>> claim_due(std::size_t budget);
    // The mailer took it: the entry goes.
    Status sent(const OutboxItem &item);
    // The mailer refused it: the delay before the next send (item.key and item.attempts updated,
    // the entry held until then), or nullopt when its holder stops: it was the last try (the
    // entry goes, the token is cancelled, the audit trail records delivery.failed), or another
    // sender claimed the entry meanwhile.
    // It is also the last try when the next one would come after the token (or a notice's
    // kNoticeLifetime) expired.
    // `error`: why the send failed (the relay's or the API's reply; no secret), kept on the entry
    // for signin-admin outbox until the next failure or its end.
    Result<std::optional<Millis>> failed(OutboxItem &item, std::string_view error = {});
    // The mailer refused it for good (an SMTP 5xx: a mailbox that does not exist, a message the
    // relay will never take): no retry; the entry goes, the token is cancelled and
    // delivery.failed audited with `why` (the reply code; no secret). Nothing when another
    // sender claimed the entry meanwhile.
    Status refused(const OutboxItem &item, std::string_view why);
    // Whether the item is still to be sent by its holder: its entry is still under item.key and
    // its token (if any) is still usable.
    Result<bool> wanted(const OutboxItem &item);
    // Entries waiting (sent or not yet).
    Result<std::size_t> pending();
    // Entries waiting, the earliest due first, at most `limit`: their recipient and purpose
    // unsealed (left empty for an entry that does not open), the rest as the store has it.
    Result<std::vector<OutboxEntry>> waiting(std::size_t limit);
    // Whether claim_due would find something (a read: cheap enough to ask every second).
    Result<bool> any_due();

    // The delay after the n-th failed send (1 s, doubling, at most kMaxRetryDelay).
    static Millis backoff(std::uint32_t failures);

private:
    Engine &engine_;
};

}  // namespace signin
