// The version changes engine alone, outside nginx: the time of one Migrator::migrate of the body
// bench/versions/changes.py migrates (64 KiB, about 380 items, spelled as Python's json.dumps
// spells it, through the same 3 changes), or of the 1 KiB one, in a loop.
//   c++ -std=c++20 -O2 -Iinclude bench/versions/migrate_loop.cpp build/core/libsignin_version.a \
//       -o /tmp/migrate_loop && /tmp/migrate_loop [CALLS (2000)] [big|small]
// Prints the microseconds per call (the median of 5 runs of CALLS calls) and the output's size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "signin/version/changes.hpp"

using namespace signin::version;

namespace {

std::string item(int i) {
    std::string n = std::to_string(i);
    return "{\"id\": " + n + ", \"full_name\": \"Person number " + n +
           "\", \"status\": \"enabled\", \"tier\": \"pro\", \"email\": \"person" + n +
           "@example.com\", \"address\": {\"street\": \"1 Long Road\", \"postcode\": \"N1 9GU\"}}";
}

std::string big() {
    std::string items;
    int n = 0;
    while (items.size() + 14 < 64 * 1024 - 200) items += (n ? ", " : "") + item(n), ++n;
    return "{\"items\": [" + items + "]}";
}

std::string small() {
    std::string body = item(1);
    body.pop_back();
    std::size_t pad = 1024 - body.size() - 14;
    return body + ", \"notes\": \"" + std::string(pad, 'x') + "\"}";
}

Change change(std::vector<std::string> words) {
    Change c;
    std::string err = parse_change(words, c);
    if (!err.empty()) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::exit(1);
    }
    return c;
}

}  // namespace

int main(int argc, char **argv) {
    int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
    bool is_big = argc <= 2 || std::string(argv[2]) == "big";
    std::string route = is_big ? "/big" : "/small", prefix = is_big ? "/items/*" : "";
    std::vector<std::vector<Change>> chain(2);
    chain[1] = {change({"field_renamed", prefix + "/name", prefix + "/full_name", "on", "GET", route}),
                change({"value_mapped", prefix + "/status", "active", "enabled", "on", "GET", route}),
                change({"field_added", prefix + "/tier", "default=\"free\"", "on", "GET", route})};
    Migrator m(chain);
    std::string body = is_big ? big() : small(), out;
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) {
            if (auto r = m.migrate(body, 1, 0, "GET", route, out); r != Migrator::Result::Rewritten) return 10 + static_cast<int>(r);
        }
        std::chrono::duration<double, std::micro> t = std::chrono::steady_clock::now() - t0;
        runs.push_back(t.count() / calls);
    }
    std::sort(runs.begin(), runs.end());
    std::printf("%zu bytes -> %zu: %.1f us per call (runs %.1f-%.1f)\n", body.size(), out.size(), runs[2], runs[0], runs[4]);
    return 0;
}
