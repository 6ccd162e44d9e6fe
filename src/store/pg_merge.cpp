// The planner of store/pg_merge.hpp.
#include "pg_merge.hpp"

#include <unordered_map>
#include <unordered_set>

namespace signin::pg_merge {

std::vector<std::vector<std::size_t>> plan(const std::vector<Write> &writes) {
    std::vector<std::vector<std::size_t>> groups;
    std::vector<std::unordered_set<std::string_view>> rows;  // per group: the rows it writes (keyed kinds)
    std::unordered_map<int, std::size_t> open;               // kind -> the group a write of it may join
    std::unordered_map<int, std::size_t> last;               // table -> the last group that changes it
    for (std::size_t i = 0; i < writes.size(); ++i) {
        const Write &w = writes[i];
        if (w.kind >= 0 && w.table >= 0) {
            auto g = open.find(w.kind);
            auto t = last.find(w.table);
            // the kind's open group is still the last to change its table, and does not hold this row
            if (g != open.end() && t != last.end() && t->second == g->second &&
                (w.key.empty() || !rows[g->second].contains(w.key))) {
                groups[g->second].push_back(i);
                if (!w.key.empty()) rows[g->second].insert(w.key);
                continue;
            }
        }
        const std::size_t n = groups.size();
        groups.push_back({i});
        rows.emplace_back();
        if (w.table < 0) {  // nothing moves across it
            open.clear();
            last.clear();
            continue;
        }
        last[w.table] = n;
        if (w.kind >= 0) {
            open[w.kind] = n;
            if (!w.key.empty()) rows[n].insert(w.key);
        }
    }
    return groups;
}

}  // namespace signin::pg_merge
