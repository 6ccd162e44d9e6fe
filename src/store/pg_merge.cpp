// The planner of store/pg_merge.hpp.
#include "pg_merge.hpp"

#include <unordered_map>
#include <unordered_set>

namespace signin::pg_merge {

namespace {

bool any_row(const Write &w) { return w.rows[0].empty() && w.rows[1].empty(); }

// What one group touches of its table: named rows, or any.
struct Touched {
    std::unordered_set<std::string_view> rows;
    bool any = false;
    void add(const Write &w) {
        if (any_row(w)) any = true;
        for (std::string_view r : w.rows)
            if (!r.empty()) rows.insert(r);
    }
    bool meets(const Write &w) const {
        if (any || any_row(w)) return true;
        for (std::string_view r : w.rows)
            if (!r.empty() && rows.contains(r)) return true;
        return false;
    }
};

}  // namespace

std::vector<std::vector<std::size_t>> plan(const std::vector<Write> &writes) {
    std::vector<std::vector<std::size_t>> groups;
    std::vector<Touched> touched;                                 // per group
    std::unordered_map<int, std::size_t> open;                    // kind -> the group a write of it may join
    std::unordered_map<int, std::vector<std::size_t>> on_table;   // table -> the groups that change it, in order
    for (std::size_t i = 0; i < writes.size(); ++i) {
        const Write &w = writes[i];
        if (w.kind >= 0 && w.table >= 0) {
            if (auto g = open.find(w.kind); g != open.end()) {
                // it moves ahead of every later group on its table: each must leave its rows alone
                const auto &later = on_table[w.table];
                bool commutes = true;
                for (auto h = later.rbegin(); commutes && h != later.rend() && *h > g->second; ++h)
                    commutes = !touched[*h].meets(w);
                if (commutes && !(w.once && touched[g->second].meets(w))) {
                    groups[g->second].push_back(i);
                    touched[g->second].add(w);
                    continue;
                }
            }
        }
        const std::size_t n = groups.size();
        groups.push_back({i});
        touched.emplace_back();
        if (w.table < 0) {  // nothing moves across it
            open.clear();
            on_table.clear();
            continue;
        }
        touched[n].add(w);
        on_table[w.table].push_back(n);
        if (w.kind >= 0) open[w.kind] = n;
    }
    return groups;
}

}  // namespace signin::pg_merge
