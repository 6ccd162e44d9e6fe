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

std::shared_ptr<const Principal> ReadTxn::principal(std::string_view key) {
    auto s = session(key);
    if (!s) return nullptr;
    auto u = user_by_id(s->user_id);
    if (!u) return nullptr;
    return std::make_shared<const Principal>(Principal{std::move(*u), std::move(*s)});
}

}  // namespace signin
