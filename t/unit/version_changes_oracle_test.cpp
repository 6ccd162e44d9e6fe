// The version changes engine against the reference one it replaced (version_changes_oracle.hpp):
// random bodies (valid and broken JSON, escapes, names given twice, whitespace) through random
// chains of changes, forward and back; both must give the same result and the same JSON value.
// The engine keeps the whitespace of what no change touched, the reference writes none, so the
// engine's body is compared with its insignificant whitespace taken out.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "signin/version/changes.hpp"
#include "version_changes_oracle.hpp"

using namespace signin::version;

namespace {

// The body without insignificant whitespace.
std::string compact(std::string_view s) {
    std::string out;
    bool in_string = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (in_string) {
            out += c;
            if (c == '\\' && i + 1 < s.size()) out += s[++i];
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
            out += c;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out += c;
        }
    }
    return out;
}

struct Gen {
    std::mt19937 rng;

    std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

    std::string space() {
        static const char *const spaces[] = {"", "", "", " ", "\n  ", "\t"};
        return spaces[pick(std::size(spaces))];
    }

    std::string key() {
        static const char *const keys[] = {"\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"items\"", "\"a/b\"", "\"\\u0061\"",
                                           "\"\\u0062\"", "\"a\\/b\"", "\"k\"", "\"\""};
        return keys[pick(std::size(keys))];
    }

    std::string scalar() {
        static const char *const scalars[] = {"1", "2.50", "2.5", "-0", "12345678901234567890", "1e3", "\"x\"",
                                              "\"y\"", "\"\\u0078\"", "\"x\\ny\"", "true", "false", "null",
                                              "\"caf\xc3\xa9\"", "\"\\ud83d\\ude00\""};
        return scalars[pick(std::size(scalars))];
    }

    std::string value(int depth) {
        // mostly objects at the top and arrays of objects below them: where the changes' paths go
        std::size_t kind = depth > 4 ? 0 : depth == 0 && pick(4) ? 3 : depth == 1 && pick(2) ? 2 : depth == 2 && pick(2) ? 3 : pick(4);
        if (kind < 2) return scalar();
        std::size_t n = pick(5);
        std::string out = kind == 2 ? "[" : "{";
        for (std::size_t i = 0; i < n; ++i) {
            if (i) out += "," + space();
            if (kind == 3) out += key() + space() + ":" + space();
            out += value(depth + 1);
        }
        return out + space() + (kind == 2 ? "]" : "}");
    }

    // A body: mostly JSON, now and then broken by a cut or a stray byte.
    std::string body() {
        std::string b = space() + value(0) + space();
        if (pick(10) == 0 && !b.empty()) b.resize(pick(b.size()));
        if (pick(20) == 0) b.insert(pick(b.size() + 1), 1, "x,]}\"\\"[pick(6)]);
        return b;
    }

    std::vector<std::string> words() {
        static const char *const fields[] = {"/a", "/b", "/c", "/a/b", "/a/c", "/items/*/a", "/items/*/b",
                                             "/items/0/a", "/items/1/b", "/a~1b", "/k"};
        static const char *const places[] = {"/items/*", "/a", "/b", "/items/*/a", "/a/b", "/k", "/"};
        static const char *const values[] = {"1", "\"x\"", "\"y\"", "null", "{\"k\":[1]}", "true", "2.50", "[]", "{\"k\": 1}"};
        auto field = [&] { return std::string(fields[pick(std::size(fields))]); };
        auto json = [&] { return std::string(values[pick(std::size(values))]); };
        switch (pick(4)) {
        case 0: return pick(2) ? std::vector<std::string>{"field_added", field(), "default=" + json()} : std::vector<std::string>{"field_added", field()};
        case 1: return pick(2) ? std::vector<std::string>{"field_removed", field(), "value=" + json()} : std::vector<std::string>{"field_removed", field()};
        case 2: {
            std::string from = field();
            return {"field_renamed", from, from.substr(0, from.rfind('/')) + "/" + "abcdk"[pick(5)]};
        }
        default: return {"value_mapped", places[pick(std::size(places))], json(), json()};
        }
    }

    std::vector<std::vector<Change>> chain(std::size_t versions) {
        std::vector<std::vector<Change>> out(versions);
        std::size_t n = pick(7);
        for (std::size_t i = 0; i < n; ++i) {
            Change c;
            if (parse_change(words(), c).empty()) out[1 + pick(versions - 1)].push_back(std::move(c));
        }
        return out;
    }
};

}  // namespace

TEST(VersionChangesOracle, SameResultsAsTheWholeTreeEngine) {
    Gen g{std::mt19937(40)};
    const char *names[] = {"Unchanged", "Rewritten", "Invalid"};
    std::size_t rewritten = 0, invalid = 0;
    for (int round = 0; round < 3000; ++round) {
        auto chain = g.chain(4);
        Migrator engine(chain);
        oracle::Migrator reference(chain);
        for (int b = 0; b < 8; ++b) {
            std::string body = g.body();
            std::size_t from = g.pick(4), to = g.pick(4);
            std::string out, expected;
            auto got = engine.migrate(body, from, to, "GET", "/users", out);
            auto want = reference.migrate(body, from, to, "GET", "/users", expected);
            ASSERT_EQ(names[static_cast<int>(got)], names[static_cast<int>(want)]) << body << " " << from << "->" << to;
            if (got != Migrator::Result::Rewritten) {
                invalid += got == Migrator::Result::Invalid;
                continue;
            }
            ++rewritten;
            ASSERT_EQ(compact(out), expected) << body << " " << from << "->" << to << "\n" << out;
        }
    }
    // the random chains and bodies do reach both kinds of answer
    EXPECT_GT(rewritten, 1500u) << invalid;
    EXPECT_GT(invalid, 1000u) << rewritten;
}

// Bodies built the way an API writes lists (the benchmark's shape), with whitespace, migrated
// back through renames, a mapped value and an added field: same value as the reference.
TEST(VersionChangesOracle, ListsOfObjects) {
    auto change = [](std::vector<std::string> words) {
        Change c;
        EXPECT_EQ(parse_change(words, c), "");
        return c;
    };
    std::vector<std::vector<Change>> chain{
        {},
        {change({"field_renamed", "/items/*/name", "/items/*/full_name"}), change({"value_mapped", "/items/*/status", "active", "enabled"}),
         change({"field_added", "/items/*/tier", "default=\"free\""}), change({"field_added", "/items/*/meta", "default={\"v\": [1, 2]}"}),
         change({"value_mapped", "/items/*/meta/v/*", "1", "\"one\""})}};
    Migrator engine(chain);
    oracle::Migrator reference(chain);
    std::string body = "{\"items\": [";
    for (int i = 0; i < 200; ++i) {
        std::string n = std::to_string(i);
        body += (i ? ", " : "") + std::string("{\"id\": ") + n + ", \"full_name\": \"P " + n + "\", \"status\": \"" +
                (i % 3 ? "enabled" : "gone") + "\", " + (i % 2 ? "\"tier\": \"pro\", " : "") +
                "\"address\": {\"street\": \"1 Long Road\", \"postcode\": \"N1\"}}";
    }
    body += "], \"total\": 200}";
    for (auto [from, to] : {std::pair{1, 0}, std::pair{0, 1}}) {
        std::string out, expected;
        ASSERT_EQ(engine.migrate(body, from, to, "GET", "/users", out), Migrator::Result::Rewritten);
        ASSERT_EQ(reference.migrate(body, from, to, "GET", "/users", expected), Migrator::Result::Rewritten);
        EXPECT_EQ(compact(out), expected);
        // what no change touched keeps its text, whitespace and all
        EXPECT_NE(out.find("{\"street\": \"1 Long Road\", \"postcode\": \"N1\"}"), std::string::npos);
    }
}
