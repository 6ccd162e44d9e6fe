// JSON texts for the version changes, read into a tree whose numbers, strings and containers are
// views of the text: a value keeps the exact spelling the upstream or the client gave it (cJSON
// would turn a 64-bit id into a double and respell numbers like 1.0), and a container no change
// touched is written back as its own text, untouched (insignificant whitespace included).
//
// The nodes live in one vector and link to each other by index, so a tree costs no allocation
// once its vector has grown: the migration keeps one Doc per thread for the bodies it migrates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace signin::version::json {

// The decoded text of a string token (quotes included) a Doc accepted; a lone surrogate
// becomes U+FFFD.
std::string decode_string(std::string_view raw);
// A string token for UTF-8 `text` (controls, quote and backslash escaped).
std::string encode_string(std::string_view text);

enum class Type : std::uint8_t { Null, False, True, Number, String, Array, Object };

class Doc {
public:
    static constexpr std::uint32_t none = UINT32_MAX;

    struct Node {
        const char *raw = nullptr;  // a scalar's token, or a container's text (as long as clean)
        const char *key = nullptr;  // a member's key token, quotes and escapes included
        std::uint32_t raw_len = 0, key_len = 0;
        std::uint32_t next = none;                // the next item or member of the parent
        std::uint32_t first = none, last = none;  // a container's items or members
        Type type = Type::Null;
        bool key_escaped = false;  // the key holds a backslash: compare it decoded
        bool dirty = false;        // a container changed below: its text is no longer `raw`
        bool moved = false;        // the key or the value is not the one read at this place

        std::string_view text() const { return {raw, raw_len}; }
        std::string_view key_text() const { return {key, key_len}; }
    };

    // Reads `text` (which must outlive the use of the tree) into the tree, node 0 its root;
    // false if it is not one JSON value (nesting deeper than 256 included).
    bool parse(std::string_view text);

    const Node &node(std::uint32_t i) const { return nodes_[i]; }
    bool key_is(std::uint32_t i, std::string_view name) const {
        const Node &n = nodes_[i];
        if (n.key_escaped) return key_decoded_is(n, name);
        if (n.key_len != name.size() + 2) return false;
        // names are short: a loop beats a call to memcmp
        for (std::size_t k = 0; k < name.size(); ++k)
            if (n.key[k + 1] != name[k]) return false;
        return true;
    }

    // Adds a copy of node `i` of `from` to this tree, alone (no key, no siblings); returns its index.
    std::uint32_t copy(const Doc &from, std::uint32_t i);
    // Appends member or item `child` (a node no container holds) to container `i`.
    void append(std::uint32_t i, std::uint32_t child);
    // Removes the members of object `i` named `name`; whether there was one.
    bool remove(std::uint32_t i, std::string_view name);
    // Node `i` takes the value of node `v` (a copy made by copy()), its key and place kept.
    void assign(std::uint32_t i, std::uint32_t v);
    // Sets member `i`'s key token (its object must be marked dirty).
    void set_key(std::uint32_t i, std::string_view raw_key);
    void mark_dirty(std::uint32_t i) { nodes_[i].dirty = true; }

    // Same value: strings by their decoded text, numbers by their spelling, containers item by
    // item and member by member in order.
    bool same(std::uint32_t i, const Doc &b, std::uint32_t j) const;

    // Writes node `i`'s text from the start of `buf`, growing it when needed (never shrinking it,
    // so a buffer kept for the next text is not cleared again): a changed container without
    // whitespace where it changed, the rest as written. Returns the text's length.
    std::size_t write_at(std::uint32_t i, std::string &buf) const;

    // Forgets the tree, keeping its memory for the next unless it grew over `keep` bytes.
    void clear(std::size_t keep);

private:
    std::vector<Node> nodes_;
    std::string_view text_;  // what parse() read

    static bool key_decoded_is(const Node &n, std::string_view name);
    bool same_children(std::uint32_t i, const Doc &b, std::uint32_t j, bool members) const;
    struct Out;
    void write_node(std::uint32_t i, Out &out) const;

    friend class Reader;
};

}  // namespace signin::version::json
