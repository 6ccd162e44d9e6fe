// The limits module's zone and the calls of signin_limits.h: counters in one shared-memory zone,
// shared by every worker and kept across reloads.
//
// The zone follows ngx_http_limit_req_module: a slab pool holding the index and an LRU queue,
// locked by the pool's shmtx, reused by init_zone across reloads. The index is a chained hash
// table rather than limit_req's rbtree: lookups are exact matches on a uniform 128-bit digest,
// and with tens of thousands of counters an rbtree walk costs a cache miss per level, where a
// bucket and a node are two.
// Every node has the same size (the key is kept as a keyed SipHash-128 digest, never as text),
// so evicting the least recently used node always frees room for a new one: a full zone evicts
// and keeps answering. The shared memory holds no code pointer.
#include "signin_limits.h"
#include "limits_conf.h"
#include "../signin/signin_metrics.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "signin/json.hpp"
#include "../signin/signin_conf.h"
#include "../signin/signin_jobs.h"
#include "../signin/signin_reply.h"
#include "../signin/signin_request.h"

namespace throttle = signin::throttle;
using namespace signin_ngx;

namespace {

constexpr size_t kDigest = 16;

struct Node {
    Node *next;         // hash chain
    ngx_queue_t queue;  // LRU, most recently used first
    std::int64_t expires;  // after this instant the state equals a fresh one
    std::int64_t holds;    // it refuses until this instant (a backoff's wait, a full window): never evicted before
    std::int64_t audited;  // last refusal worth an audit entry
    std::int64_t used;     // when the node last moved to the head of the LRU queue
    std::int64_t state[3]; // a WindowState or a BackoffState (memcpy)
    u_char digest[kDigest];
    u_char kind;
};

struct Shared {
    Node **buckets;
    std::uint64_t mask;  // buckets - 1 (a power of two)
    ngx_queue_t queue;   // most recently used first
    u_char key[crypto_shorthash_siphashx24_KEYBYTES];  // digest key, random per zone
};

struct ZoneCtx {
    Shared *sh;
    ngx_slab_pool_t *shpool;
};

static_assert(crypto_shorthash_siphashx24_BYTES == kDigest);
static_assert(crypto_shorthash_siphashx24_KEYBYTES >= crypto_generichash_KEYBYTES_MIN);
static_assert(std::is_trivially_copyable_v<throttle::WindowState>);
static_assert(std::is_trivially_copyable_v<throttle::BackoffState>);
static_assert(sizeof(throttle::WindowState) <= sizeof(Node::state));
static_assert(sizeof(throttle::BackoffState) <= sizeof(Node::state));

bool g_warned_full = false;
bool g_warned_nomem = false;

constexpr size_t kNodeSize = sizeof(Node);
static_assert(kNodeSize <= 128, "one slab size class for every node: eviction always makes room");

ngx_int_t init_zone(ngx_shm_zone_t *zone, void *data) {
    auto *ctx = static_cast<ZoneCtx *>(zone->data);
    if (auto *octx = static_cast<ZoneCtx *>(data)) {
        // reload: the same zone, counters and all
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }
    ctx->shpool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    if (zone->shm.exists) {
        ctx->sh = static_cast<Shared *>(ctx->shpool->data);
        return NGX_OK;
    }
    ctx->sh = static_cast<Shared *>(ngx_slab_alloc(ctx->shpool, sizeof(Shared)));
    if (ctx->sh == nullptr) return NGX_ERROR;
    ctx->shpool->data = ctx->sh;
    // about two nodes per bucket when the zone is full
    std::uint64_t buckets = 64;
    while (buckets * 2 * 128 < zone->shm.size) buckets *= 2;
    ctx->sh->buckets = static_cast<Node **>(ngx_slab_calloc(ctx->shpool, buckets * sizeof(Node *)));
    if (ctx->sh->buckets == nullptr) return NGX_ERROR;
    ctx->sh->mask = buckets - 1;
    ngx_queue_init(&ctx->sh->queue);
    if (sodium_init() < 0) return NGX_ERROR;
    randombytes_buf(ctx->sh->key, sizeof(ctx->sh->key));

    static const char prefix[] = " in signin_limits zone \"";
    size_t len = sizeof(prefix) + zone->shm.name.len + 1;
    ctx->shpool->log_ctx = static_cast<u_char *>(ngx_slab_alloc(ctx->shpool, len));
    if (ctx->shpool->log_ctx == nullptr) return NGX_ERROR;
    ngx_sprintf(ctx->shpool->log_ctx, " in signin_limits zone \"%V\"%Z", &zone->shm.name);
    ctx->shpool->log_nomem = 0;  // a full zone is handled here (evict and retry), not a crit line
    return NGX_OK;
}

LimitsConf *conf_of(ngx_http_request_t *r) {
    return static_cast<LimitsConf *>(ngx_http_get_module_main_conf(r, ngx_http_signin_limits_module));
}

std::int64_t now_ms() {
    ngx_time_t *tp = ngx_timeofday();
    return static_cast<std::int64_t>(tp->sec) * 1000 + static_cast<std::int64_t>(tp->msec);
}

struct Key {
    u_char digest[kDigest];
    std::uint64_t hash;
};

// SipHash-128 keyed with the zone's random key: fast on short keys, and nobody without the key
// can make two keys collide (an address crafted to share a victim's counter).
Key make_key(const Shared *sh, Bucket b, std::string_view key) {
    Key k;
    u_char buf[320];
    const size_t len = std::min(key.size(), sizeof(buf) - 1);
    buf[0] = static_cast<u_char>(b);
    std::memcpy(buf + 1, key.data(), len);
    if (key.size() == len) {
        crypto_shorthash_siphashx24(k.digest, buf, len + 1, sh->key);
    } else {  // a long key (never a client address): hash it whole
        crypto_generichash_state st;
        crypto_generichash_init(&st, sh->key, sizeof(sh->key), kDigest);
        crypto_generichash_update(&st, buf, 1);
        crypto_generichash_update(&st, reinterpret_cast<const u_char *>(key.data()), key.size());
        crypto_generichash_final(&st, k.digest, kDigest);
    }
    std::uint64_t h;
    std::memcpy(&h, k.digest, sizeof(h));
    k.hash = h;
    return k;
}

Node *find(Shared *sh, const Key &k) {
    for (Node *n = sh->buckets[k.hash & sh->mask]; n; n = n->next) {
        if (std::memcmp(k.digest, n->digest, kDigest) == 0) return n;
    }
    return nullptr;
}

void remove(ZoneCtx *ctx, Node *n) {
    std::uint64_t h;
    std::memcpy(&h, n->digest, sizeof(h));
    for (Node **p = &ctx->sh->buckets[h & ctx->sh->mask]; *p; p = &(*p)->next) {
        if (*p == n) {
            *p = n->next;
            break;
        }
    }
    ngx_queue_remove(&n->queue);
    ngx_slab_free_locked(ctx->shpool, n);
}

// Drops up to two expired nodes from the cold end of the queue (as limit_req does per request).
void expire(ZoneCtx *ctx, std::int64_t now) {
    for (int i = 0; i < 2 && !ngx_queue_empty(&ctx->sh->queue); i++) {
        Node *n = ngx_queue_data(ngx_queue_last(&ctx->sh->queue), Node, queue);
        if (n->expires > now) return;
        remove(ctx, n);
    }
}

// The node for a key, made (evicting the least recently used when the zone is full) if absent;
// nullptr only when not even eviction makes room. Called locked.
Node *lookup(ZoneCtx *ctx, const Key &k, Bucket b, std::int64_t now, bool create, ngx_log_t *log) {
    Node *n = find(ctx->sh, k);
    if (n) {
        // LRU to the second: a hot key moves to the head once a second, not at every request
        // (each move writes three other nodes' cache lines)
        if (now - n->used >= 1000) {
            n->used = now;
            ngx_queue_remove(&n->queue);
            ngx_queue_insert_head(&ctx->sh->queue, &n->queue);
        }
        if (n->expires <= now) {  // stale: fresh state
            std::memset(n->state, 0, sizeof(n->state));
            n->holds = 0;
        }
        return n;
    }
    if (!create) return nullptr;
    expire(ctx, now);  // room is made where nodes are made
    void *mem = ngx_slab_alloc_locked(ctx->shpool, kNodeSize);
    int evicted = 0;
    // Every node has one size, so one eviction frees one slot. The least recently used node that
    // no longer refuses goes: a flood of fresh keys must not free a victim's live password
    // backoff. Only so many are looked at; when they all still refuse, there is no room (the
    // callers then refuse: the zone fails closed).
    ngx_queue_t *q = ngx_queue_last(&ctx->sh->queue);
    for (int looked = 0; mem == nullptr && q != ngx_queue_sentinel(&ctx->sh->queue) && looked < 64; looked++) {
        Node *victim = ngx_queue_data(q, Node, queue);
        q = ngx_queue_prev(q);
        if (victim->holds > now) continue;
        remove(ctx, victim);
        evicted++;
        mem = ngx_slab_alloc_locked(ctx->shpool, kNodeSize);
    }
    if (evicted && !g_warned_full) {
        g_warned_full = true;
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "signin_limits: the zone is full; the least recently used counters are evicted "
                      "(a larger zone keeps more clients' counters)");
    }
    if (mem == nullptr) return nullptr;
    n = static_cast<Node *>(mem);
    std::memset(n, 0, sizeof(Node));
    n->kind = static_cast<u_char>(b);
    n->used = now;
    std::memcpy(n->digest, k.digest, kDigest);
    Node **bucket = &ctx->sh->buckets[k.hash & ctx->sh->mask];
    n->next = *bucket;
    *bucket = n;
    ngx_queue_insert_head(&ctx->sh->queue, &n->queue);
    return n;
}

// No room for a new counter: every counter the eviction looked at still refuses someone. The
// request is refused (fail closed) rather than let through uncounted.
Verdict no_room(ngx_log_t *log) {
    if (!g_warned_nomem) {
        g_warned_nomem = true;
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "signin_limits: the zone is full of counters that still refuse; requests that need a new "
                      "counter are refused until room frees (a larger zone holds more)");
    }
    Verdict v;
    v.allowed = false;
    v.retry_after = 1;
    return v;
}

throttle::WindowRule rule_of(LimitsConf *c, Bucket b) {
    const LimitRule *r = nullptr;
    switch (b) {
    case Bucket::Sensitive: r = &c->sensitive; break;
    case Bucket::SignedIn: r = &c->signed_in; break;
    case Bucket::Address: r = &c->address; break;
    case Bucket::ExchangeFailure: r = &c->exchange_failures; break;
    default: return {};
    }
    return throttle::WindowRule{static_cast<std::uint32_t>(r->limit), static_cast<throttle::Millis>(r->window)};
}

ZoneCtx *zone_of(ngx_http_request_t *r) {
    LimitsConf *c = conf_of(r);
    if (c == nullptr || c->zone == nullptr) return nullptr;
    auto *ctx = static_cast<ZoneCtx *>(c->zone->data);
    return ctx->sh ? ctx : nullptr;
}

enum class Op { Take, Peek, Refund };

Verdict window_op(ngx_http_request_t *r, Bucket b, std::string_view key, const throttle::WindowRule &rule, Op op) {
    ZoneCtx *ctx = zone_of(r);
    if (ctx == nullptr || rule.limit == 0) return {};
    const Key k = make_key(ctx->sh, b, key);
    const std::int64_t now = now_ms();
    Verdict out;
    ngx_shmtx_lock(&ctx->shpool->mutex);
    Node *n = lookup(ctx, k, b, now, op == Op::Take, r->connection->log);
    if (n == nullptr) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return op == Op::Take ? no_room(r->connection->log) : out;
    }
    throttle::WindowState s;
    std::memcpy(&s, n->state, sizeof(s));
    throttle::Verdict v;
    switch (op) {
    case Op::Take: v = throttle::take(s, rule, now); break;
    case Op::Peek: v = throttle::peek(s, rule, now); break;
    case Op::Refund: throttle::refund(s, rule, now); break;
    }
    if (op != Op::Peek) {
        std::memcpy(n->state, &s, sizeof(s));
        n->expires = throttle::window_expiry(s, rule);
    }
    if (!v.allowed) n->holds = std::max<std::int64_t>(n->holds, now + std::int64_t{v.retry_after} * 1000);
    out.allowed = v.allowed;
    out.retry_after = v.retry_after;
    if (!v.allowed && now - n->audited >= rule.window) {
        n->audited = now;
        out.audit = true;
    }
    ngx_shmtx_unlock(&ctx->shpool->mutex);
    return out;
}

// ---------------------------------------------------------------- 429 audit

// The first refusal of a key in a window: a `throttled` audit entry, written in a write batch.
class ThrottledAudit final : public BackgroundJob {
public:
    explicit ThrottledAudit(signin::AuditEntry entry) : BackgroundJob(Stage::Write), entry_(std::move(entry)) {}

private:
    signin::Status write() override { return identity()->record(entry_); }
    signin::AuditEntry entry_;
};

}  // namespace

// ---------------------------------------------------------------- API

namespace signin_ngx {

const char *bucket_name(Bucket b) {
    switch (b) {
    case Bucket::Sensitive: return "sensitive";
    case Bucket::SignedIn: return "signed_in";
    case Bucket::Address: return "address";
    case Bucket::ExchangeFailure: return "exchange_failures";
    case Bucket::PasswordPair: return "password_pair";
    case Bucket::PasswordAddress: return "password_address";
    case Bucket::PasswordRegistration: return "password_registration";
    }
    return "unknown";
}

bool limits_on(ngx_http_request_t *r) { return zone_of(r) != nullptr; }

Verdict limit_take(ngx_http_request_t *r, Bucket b, std::string_view key) {
    LimitsConf *c = conf_of(r);
    if (c == nullptr || c->zone == nullptr) return {};
    return window_op(r, b, key, rule_of(c, b), Op::Take);
}

Verdict limit_peek(ngx_http_request_t *r, Bucket b, std::string_view key) {
    LimitsConf *c = conf_of(r);
    if (c == nullptr || c->zone == nullptr) return {};
    return window_op(r, b, key, rule_of(c, b), Op::Peek);
}

void limit_refund(ngx_http_request_t *r, Bucket b, std::string_view key) {
    LimitsConf *c = conf_of(r);
    if (c == nullptr || c->zone == nullptr) return;
    (void)window_op(r, b, key, rule_of(c, b), Op::Refund);
}

void limit_note_failure(ngx_http_request_t *r, Bucket b, std::string_view key) { (void)limit_take(r, b, key); }

throttle::WindowRule limit_rule(ngx_http_request_t *r, Bucket b) {
    LimitsConf *c = conf_of(r);
    if (c == nullptr || c->zone == nullptr) return {};
    return rule_of(c, b);
}

Verdict limit_take_rule(ngx_http_request_t *r, Bucket b, std::string_view key, const throttle::WindowRule &rule) {
    return window_op(r, b, key, rule, Op::Take);
}

Verdict backoff_check(ngx_http_request_t *r, Bucket b, std::string_view key, const throttle::BackoffRule &rule) {
    ZoneCtx *ctx = zone_of(r);
    if (ctx == nullptr) return {};
    const Key k = make_key(ctx->sh, b, key);
    const std::int64_t now = now_ms();
    Verdict out;
    ngx_shmtx_lock(&ctx->shpool->mutex);
    // made now if absent, so that the attempt's failure has a place to be counted: without one
    // the attempt is refused (fail closed) instead of going uncounted
    Node *n = lookup(ctx, k, b, now, true, r->connection->log);
    if (n == nullptr) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return no_room(r->connection->log);
    }
    throttle::BackoffState s;
    std::memcpy(&s, n->state, sizeof(s));
    throttle::Verdict v = throttle::backoff_check(s, rule, now);
    out.allowed = v.allowed;
    out.retry_after = v.retry_after;
    if (!v.allowed && now - n->audited >= rule.base) {
        n->audited = now;
        out.audit = true;
    }
    ngx_shmtx_unlock(&ctx->shpool->mutex);
    return out;
}

void backoff_fail(ngx_http_request_t *r, Bucket b, std::string_view key, const throttle::BackoffRule &rule) {
    ZoneCtx *ctx = zone_of(r);
    if (ctx == nullptr) return;
    const Key k = make_key(ctx->sh, b, key);
    const std::int64_t now = now_ms();
    ngx_shmtx_lock(&ctx->shpool->mutex);
    Node *n = lookup(ctx, k, b, now, true, r->connection->log);
    if (n) {
        throttle::BackoffState s;
        std::memcpy(&s, n->state, sizeof(s));
        s = throttle::backoff_fail(s, rule, now);
        std::memcpy(n->state, &s, sizeof(s));
        n->expires = throttle::backoff_expiry(s, rule);
        n->holds = s.until;
    }
    ngx_shmtx_unlock(&ctx->shpool->mutex);
    if (n == nullptr) (void)no_room(r->connection->log);
}

void backoff_clear(ngx_http_request_t *r, Bucket b, std::string_view key) {
    ZoneCtx *ctx = zone_of(r);
    if (ctx == nullptr) return;
    const Key k = make_key(ctx->sh, b, key);
    ngx_shmtx_lock(&ctx->shpool->mutex);
    if (Node *n = find(ctx->sh, k)) remove(ctx, n);
    ngx_shmtx_unlock(&ctx->shpool->mutex);
}

ngx_int_t send_rate_limited(ngx_http_request_t *r, Bucket b, const Verdict &v, std::string_view what) {
    count_limited(b);
    if (r->request_body == nullptr && ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    const unsigned secs = v.retry_after ? v.retry_after : 1;
    if (v.audit) {
        const bool queued = guard(
            [&] {
                signin::AuditEntry entry;
                entry.kind = "throttled";
                entry.client = client_of(r);
                entry.detail = std::string(bucket_name(b)) + ":" + std::string(what);
                return start_background_job(std::make_unique<ThrottledAudit>(std::move(entry))) == NGX_OK;
            },
            [](const std::exception *) { return false; });
        if (!queued) ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: could not queue a throttled audit entry");
    }
    if (!add_header(r, "Retry-After", std::to_string(secs))) return NGX_ERROR;
    signin::json::Writer w;
    w.begin_object()
        .key("error")
        .value("too many requests; try again in " + std::to_string(secs) + (secs == 1 ? " second" : " seconds"))
        .key("code")
        .value("rate_limited")
        .key("retry_after")
        .value(static_cast<std::int64_t>(secs))
        .end_object();
    return send_json(r, 429, w.str());
}

ngx_shm_zone_t *add_limits_zone(ngx_conf_t *cf, ngx_str_t *name, size_t size) {
    ngx_shm_zone_t *zone = ngx_shared_memory_add(cf, name, size, &ngx_http_signin_limits_module);
    if (zone == nullptr) return nullptr;
    if (zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_limits zone \"%V\" is already defined", name);
        return nullptr;
    }
    auto *ctx = static_cast<ZoneCtx *>(ngx_pcalloc(cf->pool, sizeof(ZoneCtx)));
    if (ctx == nullptr) return nullptr;
    zone->init = init_zone;
    zone->data = ctx;
    return zone;
}

}  // namespace signin_ngx
