// Events for the application behind the site (signin_events): each change to an account (made,
// deleted, suspended, its address, roles, password, second factors, passkeys, providers, its
// sessions) is written as an event in the store, in the transaction that makes the change, so an
// event is never lost and never sent for a change that was rolled back. A transport sends them
// afterwards, signed as the Standard Webhooks specification says, in order per user: no later
// event of a user goes while an earlier one waits for its next try. A refused event is tried again
// with a delay doubling from 1 s up to an hour, signin_events_retries times, then dropped (and
// audited as event.dropped).
//
// No secret is ever in an event: its body holds ids, an address, a client's address and the like.
// Valid C++17: the glue includes it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/secret.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {

class Engine;

// Every event type, in the order the documentation lists them.
inline constexpr std::array<std::string_view, 15> kEventTypes = {
    "user.created",    "user.deleted",  "user.suspended", "user.unsuspended", "user.email_changed",
    "user.roles_changed", "session.created", "session.ended", "password.changed", "mfa.enabled",
    "mfa.disabled",    "passkey.added", "passkey.removed", "provider.linked", "provider.unlinked"};
// Its index in kEventTypes, or nullopt for a name that is none.
std::optional<std::size_t> event_type_index(std::string_view type);

// The key of a Standard Webhooks secret ("whsec_" then base64 of 24 to 64 bytes); nullopt with
// `why` when the text (one line, surrounding white space ignored) is not one.
std::optional<Secret> parse_webhook_secret(std::string_view text, std::string *why);

// The webhook-signature header of a message: "v1," then the base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>" under the key.
std::string webhook_signature(const Secret &key, std::string_view id, std::int64_t timestamp, std::string_view body);

// The same signatures under one key, made many times: the key's two padded blocks are hashed once,
// here, and every signature starts from those states (HMAC's own precomputation), so an event's
// signature hashes only its message and the inner digest.
class WebhookKey {
public:
    explicit WebhookKey(const Secret &key);
    ~WebhookKey();
    WebhookKey(const WebhookKey &) = delete;
    WebhookKey &operator=(const WebhookKey &) = delete;
    // webhook_signature's text; "" if the hash failed (no memory).
    std::string sign(std::string_view id, std::int64_t timestamp, std::string_view body) const;

private:
    struct States;
    std::unique_ptr<States> states_;
};

// The registration check (signin_registration_check): the body of its POST,
// {"email", "group", "method", "client"}.
std::string registration_check_body(std::string_view email, std::string_view group, std::string_view method,
                                    std::string_view client);
// What a 2xx answer of the check gives the new account: its roles (each a role name, sorted,
// once). An empty answer, or an object without "roles", gives none. nullopt with `why` when the
// answer is not usable (not a JSON object, "roles" not an array of role names): the check then
// failed, and fails closed.
std::optional<std::vector<std::string>> registration_check_roles(std::string_view answer, std::string *why);

struct EventSettings {
    Secret key;                   // parse_webhook_secret's; empty where nothing is sent (signin-admin)
    std::vector<std::string> types;  // the types written; empty: every one
    unsigned retries = 16;        // sends after the first failure, at most
    Millis hold = 60000;          // how long a sender holds an event before another may send it
};

// The longest wait between two tries of one event.
inline constexpr Millis kMaxEventDelay = 3600 * 1000;

// One event as its sender holds it.
struct EventItem {
    std::string key;
    std::string id;        // webhook-id
    std::string type;
    std::string user_id;
    std::string body;
    std::uint32_t attempts = 1;  // sends started, counting the one about to be made
};

// What became of a failed send.
enum class EventRetry : std::uint8_t {
    Later,    // held until its next try
    Dropped,  // that was its last try: gone, audited as event.dropped
    Lost,     // another sender holds it now (this one was too slow), or it is gone
};

class Events {
public:
    explicit Events(Engine &engine) : engine_(engine) {}

    // Events that may be sent now, each held by the caller (for EventSettings::hold), at most
    // `budget`: due, and the first waiting of its user. One that had all its tries is dropped.
    Result<std::vector<EventItem>> claim_due(std::size_t budget);
    // The application took it (a 2xx): it goes.
    Status sent(const EventItem &item);
    // The same for several, in one transaction: what a worker's sends ended with meanwhile.
    Status sent(const std::vector<EventItem> &items);
    // The application refused it, or did not answer: its next try after the backoff, or dropped.
    // `error`: why (a status; kept for signin-admin events until the next try).
    Result<EventRetry> failed(const EventItem &item, std::string_view error);
    // The webhook-signature of a send made at `timestamp` (seconds since the epoch).
    std::string sign(const EventItem &item, std::int64_t timestamp) const;
    // Whether claim_due would find something.
    Result<bool> any_due();
    // Events waiting, in the order they are sent, at most `limit` (signin-admin events).
    Result<std::vector<EventRecord>> waiting(std::size_t limit);
    // Gives back events this sender held but never sent (FreshEvents: the later events of a
    // user whose earlier one failed): each due at once, its try not counted, so that the claims
    // send it after its user's earlier event, as any other.
    Status release(const std::vector<EventItem> &items);
    // Whether FreshEvents hold what they see written: events are written. Each transaction says
    // whether the events it writes may be held (WriteTxn::alone_with_events).
    bool sends_fresh() const;

    // The wait after the n-th failed send: 1 s, doubling, at most kMaxEventDelay.
    static Millis backoff(std::uint32_t failures);

private:
    Engine &engine_;
};

namespace detail {
struct FreshCollector;
}

// The events a worker sends as it writes them, without a claim. While one lives on a thread,
// each event that thread's transactions write alone (WriteTxn::alone_with_events: no other writer
// of an event beside them) is written held by the writer, as claim_due would
// hold it (its first try counted, due again after EventSettings::hold), and once its transaction
// is kept it waits here for take(): the sender sends it without another write. Only for a user
// with no earlier event waiting when the batch began (the batch's transaction looks): a later
// event of such a user is written due at once, as without FreshEvents, and the claims send it
// after the earlier one. A writer that dies before sending leaves them held: another sender takes
// them when the hold ends (at least once, as a claimed event).
//
// For a write batch (Store::batch): made on the batch's thread before it, restart() at the start
// of each of its runs (a run that is undone leaves nothing here), take() once the batch
// committed. Where sends_fresh() is false, or in a transaction not alone with events, it holds
// nothing and events are claimed as before.
class FreshEvents {
public:
    explicit FreshEvents(Events &events);
    ~FreshEvents();
    FreshEvents(const FreshEvents &) = delete;
    FreshEvents &operator=(const FreshEvents &) = delete;

    void restart();
    // The events written held, in the order their transactions were kept. The sender sends a
    // user's events one after the other: each only once the one before it was taken.
    std::vector<EventItem> take();

private:
    std::unique_ptr<detail::FreshCollector> collector_;
    detail::FreshCollector *outer_ = nullptr;
};

}  // namespace signin
