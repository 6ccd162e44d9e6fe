// Events for the application (events.hpp): what turns an audit entry into an event in the same
// transaction, the Standard Webhooks signature, and an event's life (held, sent, tried again,
// dropped) with a user's events kept in order.
#include "signin/events.hpp"

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <unordered_set>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/access.hpp"
#include "signin/engine.hpp"
#include "signin/json.hpp"
#include "text.hpp"

namespace signin {
namespace {

// The counter that tells signin-admin which types the server writes (Engine::publish_events):
// kept until the server says otherwise.
constexpr std::string_view kPublishedKey = "config\nevents";
constexpr Millis kForever = 0x7fffffffffffffffLL;
// Events looked at per claim: a backlog longer than this is sent in rounds.
constexpr std::size_t kClaimScan = 1024;
constexpr std::size_t kMaxErrorText = 300;
// Events a batch looks at before it holds what it writes (FreshEvents), to know whose events wait:
// one look per run of the batch, inside its write lock, so this bounds what holding costs every
// batch (heads only, no bodies). With more events in the store than this the application is
// behind, and the claims send them all, in order. Under the benchmark's flood the store holds the
// events in flight (at most 32 a worker), those delivered and not yet deleted and those a worker
// holds to send, far fewer than 512 while the application keeps up; a queue as long as that is
// one the claims must drain anyway.
constexpr std::size_t kFreshScan = 512;

// The type an audit entry reports, or nullopt when it reports none.
std::optional<std::string_view> type_of(const AuditEntry &e) {
    const std::string_view k = e.kind;
    if (k == "user.created" || k == "user.deleted" || k == "user.suspended" || k == "session.created" ||
        k == "session.ended" || k == "password.changed" || k == "mfa.enabled" || k == "mfa.disabled" ||
        k == "passkey.added" || k == "passkey.removed" || k == "provider.linked" || k == "provider.unlinked") {
        return k;
    }
    if (k == "user.invited") {  // an invitation makes the account unless it existed
        if (e.detail == "new") return std::string_view("user.created");
        return std::nullopt;
    }
    if (k == "user.restored") return std::string_view("user.unsuspended");
    if (k == "email.changed") return std::string_view("user.email_changed");
    if (k == "user.role_added" || k == "user.role_removed") return std::string_view("user.roles_changed");
    if (k == "logout" || k == "session.revoked") return std::string_view("session.ended");
    if (k == "password.set" || k == "password.reset") return std::string_view("password.changed");
    if (k == "mfa.reset") return std::string_view("mfa.disabled");
    return std::nullopt;
}

// The session id an audit entry of a session names ("<id>" or "<id>:all").
std::string_view session_of(std::string_view detail) { return detail.substr(0, detail.find(':')); }

// The body of the event an audit entry reports.
std::string body_of(WriteTxn &txn, std::string_view type, const AuditEntry &e, const EventFacts &f) {
    json::Writer w;
    w.begin_object().key("type").value(type).key("timestamp").time(e.at).key("data").begin_object();
    w.key("user_id").value(e.user_id);
    if (type.substr(0, 5) == "user." && !e.email.empty()) w.key("email").value(e.email);
    if (type == "user.roles_changed") {
        w.key("roles").begin_array();
        if (auto u = txn.user_by_id(e.user_id)) {
            for (const auto &r : u->roles) w.value(r);
        }
        w.end_array();
    } else if (type == "session.created") {
        if (!f.session_id.empty()) w.key("session_id").value(f.session_id);
        w.key("method").value(f.method).key("mfa").value(f.mfa).key("client").value(e.client);
        w.key("user_agent").value(f.user_agent);
    } else if (type == "session.ended") {
        const std::string_view reason = !f.reason.empty() ? f.reason : e.kind == "logout" ? "logout" : "revoked";
        const std::string_view id = !f.session_id.empty() ? f.session_id : session_of(e.detail);
        if (!id.empty()) w.key("session_id").value(id);
        w.key("reason").value(reason);
    } else if (type == "mfa.enabled" || type == "mfa.disabled") {
        if (e.kind == "mfa.reset") w.key("reason").value("reset");
    } else if (type == "passkey.added" || type == "passkey.removed") {
        w.key("name").value(e.detail);
    } else if (type == "provider.linked" || type == "provider.unlinked") {
        w.key("provider").value(std::string_view(e.detail).substr(0, std::string_view(e.detail).find(':')));
    }
    w.end_object().end_object();
    return w.take();
}

// "msg_" and 16 random bytes in base64url (22 characters).
std::string new_event_id() {
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    return "msg_" + enc::base64url(raw, sizeof raw);
}

bool out_of_tries(unsigned retries, std::uint32_t attempts) { return attempts >= 1 + static_cast<std::uint64_t>(retries); }

// Gives an event up: it goes, and the audit trail says so (its type and id; never its body).
void drop(WriteTxn &txn, const EventRecord &r, Millis now) {
    txn.del_event(r.key);
    txn.append_audit(detail::audit(now, "event.dropped", {}, {}, r.user_id, r.type + " " + r.id));
}

}  // namespace

std::optional<std::size_t> event_type_index(std::string_view type) {
    for (std::size_t i = 0; i < kEventTypes.size(); ++i) {
        if (kEventTypes[i] == type) return i;
    }
    return std::nullopt;
}

std::optional<Secret> parse_webhook_secret(std::string_view text, std::string *why) {
    const std::string_view t = text::trim(text, " \t\r\n");
    auto fail = [&](const char *reason) -> std::optional<Secret> {
        if (why) *why = reason;
        return std::nullopt;
    };
    if (t.substr(0, 6) != "whsec_") return fail("it does not start with whsec_");
    const std::string_view b64 = t.substr(6);
    std::string raw(b64.size(), '\0');
    std::size_t len = 0;
    if (sodium_base642bin(reinterpret_cast<unsigned char *>(raw.data()), raw.size(), b64.data(), b64.size(), nullptr,
                          &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0) {
        sodium_memzero(raw.data(), raw.size());
        return fail("what follows whsec_ is not base64");
    }
    raw.resize(len);
    if (len < 24 || len > 64) {
        sodium_memzero(raw.data(), raw.size());
        return fail("the key is not 24 to 64 bytes long");
    }
    return Secret(std::move(raw));
}

// HMAC-SHA256 (RFC 2104) over OpenSSL's SHA-256, whose assembly (SHA extensions, AVX2) hashes a
// block in a fraction of libsodium's portable code's instructions: an event's signature hashed
// about ten blocks, the largest share of what sending it cost.
struct WebhookKey::States {
    EVP_MD_CTX *inner = nullptr;  // SHA-256 after the key ^ 0x36 block
    EVP_MD_CTX *outer = nullptr;  // SHA-256 after the key ^ 0x5c block
    ~States() {
        EVP_MD_CTX_free(inner);  // (each clears its state as it frees it)
        EVP_MD_CTX_free(outer);
    }
};

namespace {

constexpr std::size_t kShaBlock = 64;

// A SHA-256 state that has hashed the key, padded to a block, each byte ^ pad; nullptr on failure.
EVP_MD_CTX *keyed_state(const unsigned char (&key)[kShaBlock], unsigned char pad) {
    unsigned char block[kShaBlock];
    for (std::size_t i = 0; i < kShaBlock; ++i) block[i] = static_cast<unsigned char>(key[i] ^ pad);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                    EVP_DigestUpdate(ctx, block, sizeof block) == 1;
    OPENSSL_cleanse(block, sizeof block);
    if (!ok) {
        EVP_MD_CTX_free(ctx);
        return nullptr;
    }
    return ctx;
}

}  // namespace

WebhookKey::WebhookKey(const Secret &key) : states_(std::make_unique<States>()) {
    unsigned char block[kShaBlock] = {};
    const std::string_view k = key.reveal();
    if (k.size() > kShaBlock) {  // a longer key is its digest (parse_webhook_secret's are at most 64 bytes)
        unsigned int len = 0;
        if (EVP_Digest(k.data(), k.size(), block, &len, EVP_sha256(), nullptr) != 1) return;
    } else {
        std::copy(k.begin(), k.end(), block);
    }
    states_->inner = keyed_state(block, 0x36);
    states_->outer = keyed_state(block, 0x5c);
    OPENSSL_cleanse(block, sizeof block);
}

WebhookKey::~WebhookKey() = default;

std::string WebhookKey::sign(std::string_view id, std::int64_t timestamp, std::string_view body) const {
    if (states_->inner == nullptr || states_->outer == nullptr) return {};
    char ts[24];
    const std::size_t ts_len = static_cast<std::size_t>(std::to_chars(ts, ts + sizeof ts, timestamp).ptr - ts);
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX *)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    auto feed = [&](std::string_view s) { return EVP_DigestUpdate(ctx.get(), s.data(), s.size()) == 1; };
    const bool ok = ctx && EVP_MD_CTX_copy_ex(ctx.get(), states_->inner) == 1 && feed(id) && feed(".") &&
                    feed(std::string_view(ts, ts_len)) && feed(".") && feed(body) &&
                    EVP_DigestFinal_ex(ctx.get(), digest, &len) == 1 &&
                    EVP_MD_CTX_copy_ex(ctx.get(), states_->outer) == 1 &&
                    EVP_DigestUpdate(ctx.get(), digest, len) == 1 && EVP_DigestFinal_ex(ctx.get(), digest, &len) == 1;
    if (!ok) return {};
    // base64 (standard, padded): 44 characters for 32 bytes, and a NUL
    unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    const int n = EVP_EncodeBlock(b64, digest, static_cast<int>(len));
    std::string out;
    out.reserve(3 + static_cast<std::size_t>(n));
    out.append("v1,").append(reinterpret_cast<const char *>(b64), static_cast<std::size_t>(n));
    return out;
}

std::string webhook_signature(const Secret &key, std::string_view id, std::int64_t timestamp, std::string_view body) {
    return WebhookKey(key).sign(id, timestamp, body);
}

// ---- events held as they are written (FreshEvents) ------------------------------------------------

namespace detail {

// What a FreshEvents sees of one run of its batch.
struct FreshCollector {
    // The users (hashes: a shared one only sends an event through the claims) with an event
    // waiting when the run wrote its first event; `full` when there were more events than a look
    // reads: then nothing is held in this run.
    std::unordered_set<std::size_t> waiting;
    bool scanned = false;
    bool full = false;
    std::vector<EventItem> items;  // written held, in kept transactions

    void reset() {
        waiting.clear();
        scanned = full = false;
        items.clear();
    }
    // Whether an event of `user_id` written in `txn` (one of this run's) may be held by its writer.
    // The run's own held events are not among those it saw waiting: a user's events written held
    // in one run are sent in order by the one sender that takes them all.
    bool may_hold(WriteTxn &txn, std::string_view user_id) {
        if (!txn.alone_with_events()) return false;  // another writer's event may come first
        if (!scanned) {
            scanned = true;
            std::size_t seen = 0;
            txn.event_heads(kFreshScan, [&](const EventHead &h) {
                waiting.insert(std::hash<std::string_view>{}(h.user_id));
                return ++seen < kFreshScan;
            });
            full = seen >= kFreshScan;
        }
        return !full && waiting.count(std::hash<std::string_view>{}(user_id)) == 0;
    }
};

}  // namespace detail

namespace {
thread_local detail::FreshCollector *t_fresh = nullptr;
}  // namespace

bool Events::sends_fresh() const {
    return engine_.events_ != nullptr;
}

FreshEvents::FreshEvents(Events &events) : outer_(t_fresh) {
    if (!events.sends_fresh()) return;
    collector_ = std::make_unique<detail::FreshCollector>();
    t_fresh = collector_.get();
}

FreshEvents::~FreshEvents() {
    if (collector_) t_fresh = outer_;
}

void FreshEvents::restart() {
    if (collector_) collector_->reset();
}

std::vector<EventItem> FreshEvents::take() {
    if (!collector_) return {};
    std::vector<EventItem> out = std::move(collector_->items);
    collector_->reset();
    return out;
}

// ---- the engine's side -------------------------------------------------------------------------

void Engine::use_events(const EventSettings &settings) {
    auto st = std::make_shared<EventState>();
    if (!settings.key.empty()) st->key.emplace(settings.key);
    st->retries = settings.retries;
    st->hold = settings.hold;
    st->types.fill(settings.types.empty());
    for (const auto &t : settings.types) {
        if (auto i = event_type_index(t)) st->types[*i] = true;
    }
    events_ = st;
    std::weak_ptr<const EventState> weak = st;
    auto hook = std::make_shared<const AuditHook>([weak](WriteTxn &txn, const AuditEntry &e, const EventFacts &f) {
        auto state = weak.lock();
        if (!state) return;
        const auto type = type_of(e);
        if (!type) return;
        const auto i = event_type_index(*type);
        if (!i || !state->types[*i]) return;
        EventRecord r;
        r.id = new_event_id();
        r.type = std::string(*type);
        r.user_id = e.user_id;
        r.body = body_of(txn, *type, e, f);
        r.created_at = e.at;
        r.due_at = e.at;
        r.attempts = 0;
        detail::FreshCollector *fresh = t_fresh;
        const bool held = fresh != nullptr && fresh->may_hold(txn, r.user_id);
        if (held) {  // as claim_due would hold it, for this writer
            r.attempts = 1;
            r.due_at = e.at + state->hold;
        }
        txn.put_event(r);
        if (held) {  // r is written: its strings move to the sender
            txn.on_commit([fresh, item = EventItem{std::move(r.key), std::move(r.id), std::move(r.type),
                                                   std::move(r.user_id), std::move(r.body), 1}]() mutable {
                fresh->items.push_back(std::move(item));
            });
        }
    });
    store_->set_audit_hook(std::move(hook));
}

Status Engine::publish_events() {
    return detail::guarded("publish the event types", [&]() -> Status {
        std::optional<std::string> want;
        if (events_) {
            std::string types;
            for (std::size_t i = 0; i < kEventTypes.size(); ++i) {
                if (!events_->types[i]) continue;
                if (!types.empty()) types += ' ';
                types += kEventTypes[i];
            }
            want = types.empty() ? std::string("-") : types;
        }
        if (store_->read()->counter(kPublishedKey) == want) return ok_status();  // no write at every start
        auto txn = store_->write();
        if (want) {
            txn->put_counter(kPublishedKey, *want, kForever);
        } else {
            txn->del_counter(kPublishedKey);
        }
        txn->commit();
        return ok_status();
    });
}

Result<bool> Engine::use_published_events() {
    return detail::guarded("read the event types", [&]() -> Result<bool> {
        auto txn = store_->read();
        auto text = txn->counter(kPublishedKey);
        if (!text) return false;
        EventSettings s;
        std::string_view rest = *text;
        while (!rest.empty()) {
            const auto sp = rest.find(' ');
            const std::string_view word = rest.substr(0, sp);
            if (event_type_index(word)) s.types.emplace_back(word);
            rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
        }
        if (s.types.empty()) return false;  // "-": none of the types is written
        use_events(s);
        return true;
    });
}

// ---- an event's life ---------------------------------------------------------------------------

Millis Events::backoff(std::uint32_t failures) {
    if (failures == 0) return 0;
    const std::uint32_t shift = std::min<std::uint32_t>(failures - 1, 20);
    return std::min(Millis{1000} << shift, kMaxEventDelay);
}

namespace {

// The users whose earliest waiting event a scan has passed: only that one of each may go. Kept as
// hashes (a scan's views do not outlive their visit); two users with one hash only delay the second
// one's event to a later look, never send it out of order.
class WaitingUsers {
public:
    // Whether this is the user's first event of the scan (and from now on it is not).
    bool first(std::string_view user_id) { return seen_.insert(std::hash<std::string_view>{}(user_id)).second; }

private:
    std::unordered_set<std::size_t> seen_;
};

}  // namespace

Result<std::vector<EventItem>> Events::claim_due(std::size_t budget) {
    auto st = engine_.events_;
    if (!st || budget == 0) return std::vector<EventItem>{};
    return detail::guarded("events claim", [&]() -> Result<std::vector<EventItem>> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        // The scan reads only what it chooses by, and stops once it has chosen enough: what it
        // passes is mostly held by a sender, or waits behind its user's earlier event.
        std::vector<std::string> chosen;
        WaitingUsers waiting;
        txn->event_heads(kClaimScan, [&](const EventHead &h) {
            if (!waiting.first(h.user_id)) return true;
            if (h.due_at <= now) chosen.emplace_back(h.key);
            return chosen.size() < budget;
        });
        std::vector<EventItem> out;
        for (const std::string &key : chosen) {
            auto r = txn->event(key);
            if (!r) continue;
            if (out_of_tries(st->retries, r->attempts)) {  // its holder vanished after its last try
                drop(*txn, *r, now);  // (the user's next event goes at the next look)
                continue;
            }
            r->attempts += 1;
            r->due_at = now + st->hold;
            txn->update_event(*r);
            out.push_back(EventItem{r->key, std::move(r->id), std::move(r->type), std::move(r->user_id),
                                    std::move(r->body), r->attempts});
        }
        txn->commit();
        return out;
    });
}

Status Events::sent(const EventItem &item) { return sent(std::vector<EventItem>{item}); }

Status Events::sent(const std::vector<EventItem> &items) {
    return detail::guarded("event sent", [&]() -> Status {
        auto txn = engine_.store_->write();
        for (const auto &item : items) txn->del_event_if(item.key, item.id);
        txn->commit();
        return ok_status();
    });
}

Result<EventRetry> Events::failed(const EventItem &item, std::string_view error) {
    auto st = engine_.events_;
    if (!st) return Error{Code::Internal, "no events"};
    return detail::guarded("event failure", [&]() -> Result<EventRetry> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto r = txn->event(item.key);
        if (!r || r->id != item.id || r->attempts != item.attempts) {  // not this holder's any more
            txn->commit();
            return EventRetry::Lost;
        }
        if (out_of_tries(st->retries, r->attempts)) {
            drop(*txn, *r, now);
            txn->commit();
            return EventRetry::Dropped;
        }
        r->due_at = now + backoff(r->attempts);
        r->last_error = error.empty() ? std::string("no reason given") : std::string(error.substr(0, kMaxErrorText));
        txn->update_event(*r);
        txn->commit();
        return EventRetry::Later;
    });
}

Status Events::release(const std::vector<EventItem> &items) {
    if (items.empty()) return ok_status();
    return detail::guarded("events release", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        for (const auto &item : items) {
            auto r = txn->event(item.key);
            if (!r || r->id != item.id || r->attempts != item.attempts || r->attempts == 0) continue;
            r->attempts -= 1;  // never sent
            r->due_at = now;
            txn->update_event(*r);
        }
        txn->commit();
        return ok_status();
    });
}

std::string Events::sign(const EventItem &item, std::int64_t timestamp) const {
    auto st = engine_.events_;
    if (!st || !st->key) return {};
    return st->key->sign(item.id, timestamp, item.body);
}

Result<bool> Events::any_due() {
    if (!engine_.events_) return false;
    return detail::guarded("events check", [&]() -> Result<bool> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        bool due = false;
        WaitingUsers waiting;
        txn->event_heads(kClaimScan, [&](const EventHead &h) {
            due = waiting.first(h.user_id) && h.due_at <= now;
            return !due;
        });
        return due;
    });
}

Result<std::vector<EventRecord>> Events::waiting(std::size_t limit) {
    return detail::guarded("events list", [&]() -> Result<std::vector<EventRecord>> {
        auto txn = engine_.store_->read();
        return txn->events(limit);
    });
}

std::string registration_check_body(std::string_view email, std::string_view group, std::string_view method,
                                    std::string_view client) {
    json::Writer w;
    w.begin_object().key("email").value(email).key("group").value(group).key("method").value(method);
    w.key("client").value(client).end_object();
    return w.take();
}

std::optional<std::vector<std::string>> registration_check_roles(std::string_view answer, std::string *why) {
    auto fail = [why](std::string text) -> std::optional<std::vector<std::string>> {
        if (why != nullptr) *why = std::move(text);
        return std::nullopt;
    };
    std::vector<std::string> roles;
    if (answer.find_first_not_of(" \t\r\n") == std::string_view::npos) return roles;
    std::unique_ptr<cJSON, void (*)(cJSON *)> root(cJSON_ParseWithLength(answer.data(), answer.size()), cJSON_Delete);
    if (!root || !cJSON_IsObject(root.get())) return fail("the answer is not a JSON object");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root.get(), "roles");
    if (list == nullptr || cJSON_IsNull(list)) return roles;
    if (!cJSON_IsArray(list)) return fail("\"roles\" is not an array");
    const cJSON *item = nullptr;
    cJSON_ArrayForEach(item, list) {
        if (!cJSON_IsString(item) || item->valuestring == nullptr) return fail("\"roles\" holds something else than a string");
        auto role = normalize_role(item->valuestring);
        if (!role) return fail("\"roles\" holds a name that is no role ([a-z0-9_-]{1,32})");
        auto at = std::lower_bound(roles.begin(), roles.end(), *role);
        if (at == roles.end() || *at != *role) roles.insert(at, *role);
    }
    if (roles.size() > 64) return fail("\"roles\" names more than 64 roles");
    return roles;
}

}  // namespace signin
