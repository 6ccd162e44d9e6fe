// The one place a backend is chosen (store.hpp: open_store, store_traits, prepare_store,
// describe_store), and what every backend shares.
#include <memory>
#include <string>
#include <string_view>

#include "signin/store.hpp"
#include "backends.hpp"

namespace signin {

StoreTraits store_traits(std::string_view where) {
    return is_pg_url(where) ? backends::kPg : backends::kLmdb;
}

std::unique_ptr<Store> open_store(const StoreOptions &opts) {
    if (is_pg_url(opts.where)) {
        PgOptions pg;
        pg.conninfo = opts.where;
        pg.wait_for_server = opts.wait_for_server;
        pg.audit_max = opts.audit_max;
        if (opts.connections != 0) pg.connections = opts.connections;
        return open_pg_store(pg);
    }
    LmdbOptions lmdb;
    lmdb.path = opts.where;
    if (opts.map_size != 0) lmdb.map_size = opts.map_size;
    lmdb.audit_max = opts.audit_max;
    return open_lmdb_store(lmdb);
}

void prepare_store(std::string_view where, std::optional<unsigned> owner) {
    if (!is_pg_url(where)) backends::prepare_lmdb(std::string(where), owner);
}

std::string describe_store(std::string_view where) {
    // a URI may hold a password: only the kind of database is named
    if (is_pg_url(where)) return "(PostgreSQL)";
    return std::string(where);
}

std::vector<std::string> user_index_keys(const User &u) {
    auto lower = [](std::string s) {
        for (char &c : s) {
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        return s;
    };
    auto key = [&](char tag, std::string_view value) {
        std::string k(1, tag);
        k.append(value);
        k.push_back('\0');
        k.append(u.id);
        return k;
    };
    std::vector<std::string> out;
    if (!u.email.empty()) {
        const std::string email = lower(u.email);
        out.push_back(key('e', email));
        const auto at = email.rfind('@');
        if (at != std::string::npos) out.push_back(key('d', std::string_view(email).substr(at + 1)));
    }
    for (const auto &role : u.roles) out.push_back(key('r', role));
    out.push_back(key('s', user_state(u)));
    return out;
}

std::optional<std::string> pin_api_version(WriteTxn &txn, std::string_view user_id, std::string_view name,
                                           bool first_use) {
    auto u = txn.user_by_id(user_id);
    if (!u) return std::nullopt;
    if ((first_use && !u->api_version.empty()) || u->api_version == name) return std::move(u->api_version);
    u->api_version = std::string(name);
    txn.put_user(*u);
    return std::move(u->api_version);
}

bool valid_api_version_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const auto b = static_cast<unsigned char>(c);
        if (b <= ' ' || b >= 0x7f || c == '/' || c == '"' || c == '\\' || c == ',') return false;
    }
    return true;
}

std::shared_ptr<const Principal> ReadTxn::principal(std::string_view key) {
    auto s = session(key);
    if (!s) return nullptr;
    auto u = user_by_id(s->user_id);
    if (!u) return nullptr;
    return std::make_shared<const Principal>(Principal{std::move(*u), std::move(*s)});
}

std::vector<std::shared_ptr<const Principal>> ReadTxn::principals(const std::vector<std::string_view> &keys) {
    std::vector<std::shared_ptr<const Principal>> out;
    out.reserve(keys.size());
    for (std::string_view k : keys) out.push_back(principal(k));
    return out;
}

}  // namespace signin
