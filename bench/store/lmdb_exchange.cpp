// The store's share of a token exchange, without nginx: what one write batch of K exchanges costs
// inside LMDB's write lock (the transaction's work, then its durable commit), for the layout of
// src/store/lmdb_store.cpp and for alternatives that the store could adopt. bench/store/run builds
// and runs it; bench/README.md has the figures.
//
// An exchange (a registration token, as in bench/run): read and delete the token and its address
// index entry, look the address up, create the user (users, user_email), two audit entries, and
// the session (sessions, session_ids, user_sessions). Records have the sizes of the real ones.
//
// Variants (flags): nested=1 each exchange is a nested transaction of the batch (as now);
// ordered=1 token and session keys start with their creation time (a secret that carries its
// record's time-ordered id), so new records append and tokens are spent in issue order;
// writemap=1 MDB_WRITEMAP (LMDB refuses nested transactions with it); lazy_index=1 the exchange
// leaves the address index entry of the spent token (tokens_for() already skips entries whose
// token is gone; the next request for that address or the purge would delete it);
// nometasync=1 MDB_NOMETASYNC, and the meta page made durable by mdb_env_sync after the commit
// (what src/store does since 2026-11-26: the second flush happens after the write lock is
// released, so the other worker's batch runs during it); its time is reported apart ("after").
#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <algorithm>

namespace {

std::mt19937_64 rng(42);

void check(int rc, const char *what) {
    if (rc != 0) {
        std::fprintf(stderr, "%s: %s\n", what, mdb_strerror(rc));
        std::exit(1);
    }
}

std::string random_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto &c : s) c = static_cast<char>(rng());
    return s;
}

std::string be64(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i) {
        s[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
        v >>= 8;
    }
    return s;
}

MDB_val val(const std::string &s) { return MDB_val{s.size(), const_cast<char *>(s.data())}; }

struct Dbs {
    MDB_dbi users, user_email, tokens, addr_tokens, sessions, session_ids, user_sessions, audit;
};

std::uint64_t g_clock = 1'700'000'000'000ull;  // ms, advances per record

std::string uuid7() { return be64(g_clock) + random_bytes(8); }  // 16 bytes, time-ordered
std::string email_of(std::uint64_t n) { return "default" + std::string(1, '\0') + "u" + std::to_string(n * 7919 % 1000003) + "-" + std::to_string(n) + "@bench.example"; }

struct Token {
    std::string key, addr;
    std::uint64_t created;
};

void put(MDB_txn *t, MDB_dbi d, const std::string &k, const std::string &v, unsigned flags = 0) {
    MDB_val kk = val(k), vv = val(v);
    int rc = mdb_put(t, d, &kk, &vv, flags);
    if (rc == MDB_KEYEXIST) return;
    check(rc, "put");
}

Token make_token(MDB_txn *t, const Dbs &d, std::uint64_t n, bool ordered) {
    Token tk;
    g_clock++;
    tk.created = g_clock;
    tk.key = ordered ? be64(g_clock) + random_bytes(24) : random_bytes(32);
    tk.addr = email_of(n);
    put(t, d.tokens, tk.key, random_bytes(110));
    put(t, d.addr_tokens, tk.addr, be64(tk.created) + tk.key, MDB_NODUPDATA);
    return tk;
}

void audit(MDB_txn *t, const Dbs &d) { put(t, d.audit, be64(g_clock) + random_bytes(8), random_bytes(190), MDB_NOOVERWRITE); }

bool g_lazy_index = false;

void exchange(MDB_txn *t, const Dbs &d, const Token &tk, bool ordered) {
    g_clock++;
    MDB_val k = val(tk.key), v{};
    check(mdb_get(t, d.tokens, &k, &v), "get token");
    std::string dup = be64(tk.created) + tk.key;
    MDB_val ak = val(tk.addr), av = val(dup);
    if (!g_lazy_index) check(mdb_del(t, d.addr_tokens, &ak, &av), "del addr_token");
    check(mdb_del(t, d.tokens, &k, nullptr), "del token");
    MDB_val ek = val(tk.addr), ev{};
    if (mdb_get(t, d.user_email, &ek, &ev) != MDB_NOTFOUND) std::exit(2);
    std::string uid = uuid7();
    put(t, d.users, uid, random_bytes(95));
    put(t, d.user_email, tk.addr, uid);
    audit(t, d);
    std::string skey = ordered ? be64(g_clock) + random_bytes(24) : random_bytes(32);
    MDB_val sk = val(skey), sv{};
    if (mdb_get(t, d.sessions, &sk, &sv) != MDB_NOTFOUND) std::exit(3);
    std::string sid = uuid7();
    put(t, d.sessions, skey, random_bytes(150));
    put(t, d.session_ids, sid, skey);
    put(t, d.user_sessions, uid, sid, MDB_NODUPDATA);
    audit(t, d);
}

long wchar() {
    FILE *f = std::fopen("/proc/self/io", "r");
    char line[128];
    long w = 0;
    while (f && std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "wchar:", 6) == 0) w = std::atol(line + 6);
    if (f) std::fclose(f);
    return w;
}

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The environment, as the variant asks.
MDB_env *open_env(const std::string &dir, bool writemap, bool nometasync) {
    mkdir(dir.c_str(), 0700);
    MDB_env *env;
    check(mdb_env_create(&env), "create");
    check(mdb_env_set_mapsize(env, 8ull << 30), "mapsize");
    check(mdb_env_set_maxdbs(env, 16), "maxdbs");
    check(mdb_env_open(env, dir.c_str(), MDB_NOTLS | (writemap ? MDB_WRITEMAP : 0) | (nometasync ? MDB_NOMETASYNC : 0), 0600), "open");
    return env;
}

// The tables an exchange writes, made when missing.
Dbs open_tables(MDB_env *env) {
    Dbs d{};
    MDB_txn *t;
    check(mdb_txn_begin(env, nullptr, 0, &t), "begin");
    check(mdb_dbi_open(t, "users", MDB_CREATE, &d.users), "dbi");
    check(mdb_dbi_open(t, "user_email", MDB_CREATE, &d.user_email), "dbi");
    check(mdb_dbi_open(t, "tokens", MDB_CREATE, &d.tokens), "dbi");
    check(mdb_dbi_open(t, "addr_tokens", MDB_CREATE | MDB_DUPSORT, &d.addr_tokens), "dbi");
    check(mdb_dbi_open(t, "sessions", MDB_CREATE, &d.sessions), "dbi");
    check(mdb_dbi_open(t, "session_ids", MDB_CREATE, &d.session_ids), "dbi");
    check(mdb_dbi_open(t, "user_sessions", MDB_CREATE | MDB_DUPSORT, &d.user_sessions), "dbi");
    check(mdb_dbi_open(t, "audit", MDB_CREATE, &d.audit), "dbi");
    check(mdb_txn_commit(t), "commit");
    return d;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 8) {
        std::fprintf(stderr, "usage: %s DIR nested ordered writemap batch_size batches prefill_users [prefill_tokens [lazy_index [nometasync]]]\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    const bool nested = std::atoi(argv[2]) != 0, ordered = std::atoi(argv[3]) != 0, writemap = std::atoi(argv[4]) != 0;
    const int batch = std::atoi(argv[5]), batches = std::atoi(argv[6]);
    const std::uint64_t prefill = std::strtoull(argv[7], nullptr, 10);
    const std::uint64_t prefill_tokens = argc > 8 ? std::strtoull(argv[8], nullptr, 10) : 0;
    g_lazy_index = argc > 9 && std::atoi(argv[9]) != 0;
    const bool nometasync = argc > 10 && std::atoi(argv[10]) != 0;
    MDB_env *env = open_env(dir, writemap, nometasync);
    Dbs d = open_tables(env);
    MDB_txn *t;

    // Earlier users, with a session each and their audit, as a store in use would have them.
    std::uint64_t n = 0;
    for (std::uint64_t done = 0; done < prefill;) {
        check(mdb_txn_begin(env, nullptr, 0, &t), "begin");
        for (int i = 0; i < 10000 && done < prefill; ++i, ++done) {
            Token tk = make_token(t, d, n++, ordered);
            exchange(t, d, tk, ordered);
        }
        check(mdb_txn_commit(t), "commit");
    }
    // The tokens to spend, issued before the timed batches (and any extra unspent ones).
    const std::uint64_t spend = static_cast<std::uint64_t>(batch) * static_cast<std::uint64_t>(batches);
    std::vector<Token> tokens;
    const std::uint64_t total_tokens = std::max(spend, prefill_tokens);
    for (std::uint64_t done = 0; done < total_tokens;) {
        check(mdb_txn_begin(env, nullptr, 0, &t), "begin");
        for (int i = 0; i < 10000 && done < total_tokens; ++i, ++done) tokens.push_back(make_token(t, d, n++, ordered));
        check(mdb_txn_commit(t), "commit");
    }
    // Spent in issue order, as the bench's clients do; unspent extras stay.
    tokens.resize(spend);
    sync();

    double run_us = 0, commit_us = 0, after_us = 0;
    long bytes = 0;
    std::vector<double> per_batch;
    std::size_t next = 0;
    for (int b = 0; b < batches; ++b) {
        long w0 = wchar();
        double t0 = now_us();
        check(mdb_txn_begin(env, nullptr, 0, &t), "begin batch");
        for (int i = 0; i < batch; ++i) {
            const Token &tk = tokens[next++];
            if (nested) {
                MDB_txn *c;
                check(mdb_txn_begin(env, t, 0, &c), "begin nested");
                exchange(c, d, tk, ordered);
                check(mdb_txn_commit(c), "commit nested");
            } else {
                exchange(t, d, tk, ordered);
            }
        }
        double t1 = now_us();
        check(mdb_txn_commit(t), "commit batch");
        double t2 = now_us();
        if (nometasync) check(mdb_env_sync(env, 1), "sync");  // outside the write lock
        double t3 = now_us();
        run_us += t1 - t0;
        commit_us += t2 - t1;
        after_us += t3 - t2;
        per_batch.push_back(t2 - t0);
        bytes += wchar() - w0;
    }
    std::sort(per_batch.begin(), per_batch.end());
    const double ex = static_cast<double>(spend);
    std::printf("lazy_index=%d nometasync=%d ", g_lazy_index ? 1 : 0, nometasync ? 1 : 0);
    std::printf("nested=%d ordered=%d writemap=%d batch=%d prefill=%llu: per exchange %.1f us in the lock "
                "(run %.1f + commit %.1f), %.1f KiB written per exchange, batch median %.0f us, %.1f us after the lock\n",
                nested, ordered, writemap, batch, static_cast<unsigned long long>(prefill), (run_us + commit_us) / ex,
                run_us / ex, commit_us / ex, static_cast<double>(bytes) / ex / 1024.0,
                per_batch[per_batch.size() / 2], after_us / ex);
    mdb_env_close(env);
    return 0;
}
