// The administrator's search over a large store, through the store API and signin::Admin (no
// HTTP): fills N accounts (default 1 000 000) straight into a fresh LMDB store in transactions of
// 10 000, then times each kind of search the admin pages make, and paging through results.
// bench/store/admin_search_run builds and runs it; bench/README.md has the figures.
//
// The accounts: user<N>@d<N % 1000>.example; one in 1000 holds the role "support", one in 10 000
// is suspended, the rest active.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "signin/admin.hpp"
#include "signin/auth.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Writes n accounts in transactions of 10 000; returns the milliseconds it took.
double fill(signin::Store &store, std::size_t n) {
    auto fill_start = Clock::now();
    for (std::size_t done = 0; done < n;) {
        auto w = store.write();
        for (std::size_t i = 0; i < 10000 && done < n; ++i, ++done) {
            signin::User u;
            char id[48];
            std::snprintf(id, sizeof id, "0190a000-0000-7000-8000-%012zu", done);
            u.id = id;
            u.email = "user" + std::to_string(done) + "@d" + std::to_string(done % 1000) + ".example";
            u.group_id = "default";
            u.created_at = u.updated_at = 1700000000000 + static_cast<signin::Millis>(done);
            if (done % 1000 == 7) u.roles = {"support"};
            u.suspended = done % 10000 == 3;
            w->put_user(u);
        }
        w->commit();
    }
    return ms_since(fill_start);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: admin_search DIR [ACCOUNTS] [REPEAT]\n");
        return 2;
    }
    const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
    const int repeat = argc > 3 ? std::atoi(argv[3]) : 20;
    signin::LmdbOptions o;
    o.path = argv[1];
    o.map_size = 16ull << 30;
    std::shared_ptr<signin::Store> store(signin::open_lmdb_store(o));

    const double fill_ms = fill(*store, n);

    std::string why;
    signin::Identity id(store, *signin::parse_origin("https://bench.example", &why), signin::Policy{});
    signin::Admin admin(id, id.tokens());
    signin::Principal p;
    p.user.id = "bench-admin";
    p.user.roles = {"admin"};

    struct Case {
        const char *name;
        signin::UserQuery q;
    };
    const std::vector<Case> cases = {
        {"address prefix (user12345)", {"user12345", "", "", "", 50}},
        {"address prefix, wide (user1)", {"user1", "", "", "", 50}},
        {"domain (@d7.example)", {"@d7.example", "", "", "", 50}},
        {"role (support)", {"", "support", "", "", 50}},
        {"state (suspended)", {"", "", "suspended", "", 50}},
        {"domain + state (@d3. suspended)", {"@d3.", "", "suspended", "", 50}},
        {"an id", {"0190a000-0000-7000-8000-000000543210", "", "", "", 50}},
        {"every account, first page", {"", "", "", "", 50}},
    };
    std::printf("accounts: %zu, filled in %.1f s (%.1f us an account)\n", n, fill_ms / 1000, fill_ms * 1000 / n);
    std::printf("%-36s %10s %8s\n", "search (a page of 50)", "median ms", "found");
    for (const auto &c : cases) {
        std::vector<double> t;
        std::size_t found = 0;
        for (int i = 0; i < repeat; ++i) {
            auto start = Clock::now();
            auto page = admin.search(p, c.q);
            t.push_back(ms_since(start));
            if (!page) {
                std::fprintf(stderr, "%s: %s\n", c.name, page.error().message.c_str());
                return 1;
            }
            found = page->users.size();
        }
        std::sort(t.begin(), t.end());
        std::printf("%-36s %10.3f %8zu\n", c.name, t[t.size() / 2], found);
    }
    // paging: 100 pages of 50 through a domain's accounts
    {
        auto start = Clock::now();
        signin::UserQuery q{"@d1.", "", "", "", 50};
        std::size_t pages = 0, seen = 0;
        for (; pages < 100; ++pages) {
            auto page = admin.search(p, q);
            if (!page) return 1;
            seen += page->users.size();
            if (page->next.empty()) break;
            q.after = page->next;
        }
        const double ms = ms_since(start);
        std::printf("%-36s %10.3f %8zu  (%zu pages, %.1f ms in all)\n", "paging @d1. (ms a page)", ms / (pages + 1),
                    seen, pages + 1, ms);
    }
    return 0;
}
