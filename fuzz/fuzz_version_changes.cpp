// libFuzzer: the version changes engine. The first byte gives a number of changes, each taking
// three bytes (kind, version 1..3, which path and values, from small pools so changes meet);
// the rest is a body (any bytes, mostly JSON from the corpus). The body is migrated back from
// the newest version to the oldest, then forward, then back again:
//   - every step gives the same result and the same JSON value as the reference engine the tests
//     keep (t/unit/version_changes_oracle.hpp: the whole-tree engine this one replaced);
//   - every rewritten body is JSON again;
//   - when the chain passes the configuration checks and has no field_removed (going forward it
//     drops what an old client sent, which nothing can bring back), forward then back gives the
//     same old-version body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../t/unit/version_changes_oracle.hpp"
#include "signin/version/changes.hpp"

namespace {

using signin::version::Change;
using signin::version::ChangeKind;
using signin::version::Migrator;

constexpr const char *fields[] = {"/a", "/b", "/c", "/a/b", "/a/c", "/items/*/a", "/items/*/b", "/items/0/a", "/a~1b"};
constexpr const char *values[] = {"/items/*", "/a", "/b", "/items/*/a", "/a/b"};
constexpr const char *json[] = {"1", "\"x\"", "\"y\"", "null", "{\"k\":[1]}", "true", "2.50", "[]"};
constexpr std::size_t versions = 4;

// The body without insignificant whitespace, so a body passed unchanged compares with a rewritten one.
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

// Migrates and checks the result is JSON and the reference's; `body` becomes the body the next
// step reads.
bool step(const Migrator &m, const signin::version::oracle::Migrator &reference, std::string &body, std::size_t from,
          std::size_t to) {
    std::string out, expected;
    Migrator::Result result = m.migrate(body, from, to, "GET", "/users", out);
    if (reference.migrate(body, from, to, "GET", "/users", expected) != result) __builtin_trap();
    if (result == Migrator::Result::Rewritten && compact(out) != expected) __builtin_trap();
    switch (result) {
    case Migrator::Result::Invalid: return false;
    case Migrator::Result::Unchanged: return true;
    case Migrator::Result::Rewritten: break;
    }
    std::string again;
    if (m.migrate(out, to, to, "GET", "/users", again) != Migrator::Result::Unchanged) __builtin_trap();
    body = std::move(out);
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 1) return 0;
    std::size_t n = data[0] % 8;
    if (size < 1 + 3 * n) return 0;
    std::vector<std::vector<Change>> chain(versions);
    bool lossy = false;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t *b = data + 1 + 3 * i;
        std::vector<std::string> words;
        std::size_t kind = b[0] % 4;
        auto field = [&](std::uint8_t x) { return std::string(fields[x % std::size(fields)]); };
        auto value = [&](std::uint8_t x) { return std::string(json[x % std::size(json)]); };
        switch (kind) {
        case 0: words = {"field_added", field(b[2])}; if (b[2] & 0x80) words.push_back("default=" + value(b[2] >> 4)); break;
        case 1: words = {"field_removed", field(b[2])}; if (b[2] & 0x80) words.push_back("value=" + value(b[2] >> 4)); break;
        case 2: {
            // a rename keeps the field in its object: the same parent, another last name
            std::string from = field(b[2]);
            std::string parent = from.substr(0, from.rfind('/'));
            words = {"field_renamed", from, parent + "/" + std::string(1, static_cast<char>('a' + (b[2] >> 4) % 4))};
            break;
        }
        default: words = {"value_mapped", values[b[2] % std::size(values)], value(b[2] >> 3), value(b[2] >> 5)}; break;
        }
        if (b[1] & 0x80) {  // some on another route: they must never apply to GET /users
            words.insert(words.end(), {"on", "POST", "/users"});
        }
        Change c;
        if (!signin::version::parse_change(words, c).empty()) continue;
        if (c.kind == ChangeKind::FieldRemoved && c.method.empty()) lossy = true;
        chain[1 + b[1] % (versions - 1)].push_back(std::move(c));
    }
    bool checked = signin::version::check_chain(chain).empty();
    Migrator m(chain);
    signin::version::oracle::Migrator reference(chain);

    std::string body(reinterpret_cast<const char *>(data) + 1 + 3 * n, size - 1 - 3 * n);
    if (!step(m, reference, body, versions - 1, 0)) return 0;  // not JSON: passed untouched
    std::string old = body;
    if (!step(m, reference, body, 0, versions - 1)) __builtin_trap();
    if (!step(m, reference, body, versions - 1, 0)) __builtin_trap();
    if (checked && !lossy && compact(body) != compact(old)) __builtin_trap();
    return 0;
}
