// The version changes engine as it was before it expanded bodies lazily (a whole tree of every
// body, each node and key on the heap), kept in the tests only as the reference the engine of
// src/version is compared with: t/unit/version_changes_test.cpp and fuzz/fuzz_version_changes.cpp
// migrate random bodies through random chains with both and want the same result and the same
// JSON value. Slow and simple on purpose; not built into the module.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "signin/version/changes.hpp"

namespace signin::version::oracle {

struct Member;

struct Node {
    enum class Type : std::uint8_t { Null, False, True, Number, String, Array, Object };
    Type type = Type::Null;
    std::string_view raw;        // Number and String (with its quotes and escapes): the text
    std::vector<Node> items;     // Array
    std::vector<Member> members;  // Object
};

struct Member {
    std::string_view raw_key;  // the key's text with quotes and escapes
    std::string key;           // decoded
    Node value;
};

constexpr int max_depth = 256;

inline void put_utf8(std::string &out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

inline int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The decoded text of a string token the parser accepted (quotes included in `raw`).
inline std::string decode_string(std::string_view raw) {
    std::string out;
    std::string_view s = raw.substr(1, raw.size() - 2);
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c != '\\') {
            out += c;
            continue;
        }
        char e = s[++i];
        switch (e) {
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
            auto read4 = [&](std::size_t at) {
                std::uint32_t v = 0;
                for (std::size_t k = 0; k < 4; ++k) v = v * 16 + static_cast<std::uint32_t>(hex(s[at + k]));
                return v;
            };
            std::uint32_t cp = read4(i + 1);
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u') {
                std::uint32_t lo = read4(i + 3);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            // a lone surrogate cannot be UTF-8: it becomes U+FFFD in the decoded form only
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
            put_utf8(out, cp);
            break;
        }
        default: out += e; break;  // " \ /
        }
    }
    return out;
}

// A JSON string token for `text` (UTF-8 passes through; controls, quote and backslash escaped).
inline std::string encode_string(std::string_view text) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (char c : text) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out += "\\u00";
            out += digits[u >> 4];
            out += digits[u & 15];
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

class Parser {
public:
    explicit Parser(std::string_view text) : s_(text) {}

    bool parse(Node &root) {
        skip();
        if (!value(root, 0)) return false;
        skip();
        return pos_ == s_.size();
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;

    void skip() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    bool string(std::string_view &raw) {
        std::size_t start = pos_++;
        while (pos_ < s_.size()) {
            auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                raw = s_.substr(start, ++pos_ - start);
                return true;
            }
            if (c < 0x20) return false;
            if (c == '\\') {
                if (++pos_ >= s_.size()) return false;
                char e = s_[pos_];
                if (e == 'u') {
                    if (pos_ + 4 >= s_.size()) return false;
                    for (std::size_t k = 1; k <= 4; ++k)
                        if (hex(s_[pos_ + k]) < 0) return false;
                    pos_ += 4;
                } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
                    return false;
                }
            }
            ++pos_;
        }
        return false;
    }

    bool digits() {
        std::size_t start = pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        return pos_ > start;
    }

    bool number(std::string_view &raw) {
        std::size_t start = pos_;
        if (s_[pos_] == '-') ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '0') {
            ++pos_;
        } else if (!digits()) {
            return false;
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (!digits()) return false;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (!digits()) return false;
        }
        raw = s_.substr(start, pos_ - start);
        return true;
    }

    bool value(Node &n, int depth) {
        if (pos_ >= s_.size() || depth > max_depth) return false;
        char c = s_[pos_];
        switch (c) {
        case 'n': n.type = Node::Type::Null; return literal("null");
        case 't': n.type = Node::Type::True; return literal("true");
        case 'f': n.type = Node::Type::False; return literal("false");
        case '"': n.type = Node::Type::String; return string(n.raw);
        case '[': {
            n.type = Node::Type::Array;
            ++pos_;
            skip();
            if (pos_ < s_.size() && s_[pos_] == ']') {
                ++pos_;
                return true;
            }
            for (;;) {
                n.items.emplace_back();
                skip();
                if (!value(n.items.back(), depth + 1)) return false;
                skip();
                if (pos_ >= s_.size()) return false;
                if (s_[pos_] == ']') {
                    ++pos_;
                    return true;
                }
                if (s_[pos_++] != ',') return false;
            }
        }
        case '{': {
            n.type = Node::Type::Object;
            ++pos_;
            skip();
            if (pos_ < s_.size() && s_[pos_] == '}') {
                ++pos_;
                return true;
            }
            // most objects of an API body have a few members: growing 1, 2, 4, 8 moved each
            // member three times (the largest part of parsing a 64 KiB body)
            n.members.reserve(8);
            for (;;) {
                skip();
                if (pos_ >= s_.size() || s_[pos_] != '"') return false;
                Member m;
                if (!string(m.raw_key)) return false;
                m.key = m.raw_key.find('\\') == std::string_view::npos
                            ? std::string(m.raw_key.substr(1, m.raw_key.size() - 2))
                            : decode_string(m.raw_key);
                skip();
                if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
                skip();
                if (!value(m.value, depth + 1)) return false;
                n.members.push_back(std::move(m));
                skip();
                if (pos_ >= s_.size()) return false;
                if (s_[pos_] == '}') {
                    ++pos_;
                    return true;
                }
                if (s_[pos_++] != ',') return false;
            }
        }
        default:
            n.type = Node::Type::Number;
            return (c == '-' || (c >= '0' && c <= '9')) && number(n.raw);
        }
    }
};

inline void write(const Node &n, std::string &out) {
    switch (n.type) {
    case Node::Type::Null: out += "null"; break;
    case Node::Type::True: out += "true"; break;
    case Node::Type::False: out += "false"; break;
    case Node::Type::Number:
    case Node::Type::String: out += n.raw; break;
    case Node::Type::Array:
        out += '[';
        for (std::size_t i = 0; i < n.items.size(); ++i) {
            if (i) out += ',';
            write(n.items[i], out);
        }
        out += ']';
        break;
    case Node::Type::Object:
        out += '{';
        for (std::size_t i = 0; i < n.members.size(); ++i) {
            if (i) out += ',';
            out += n.members[i].raw_key;
            out += ':';
            write(n.members[i].value, out);
        }
        out += '}';
        break;
    }
}

// Same value: strings by their decoded text, numbers by their spelling, containers member by
// member in order.
inline bool same(const Node &a, const Node &b) {
    if (a.type != b.type) return false;
    switch (a.type) {
    case Node::Type::Number: return a.raw == b.raw;
    case Node::Type::String:
        if (a.raw == b.raw) return true;
        // without escapes the text is the value: no need to decode
        if (a.raw.find('\\') == std::string_view::npos && b.raw.find('\\') == std::string_view::npos) return false;
        return decode_string(a.raw) == decode_string(b.raw);
    case Node::Type::Array:
        if (a.items.size() != b.items.size()) return false;
        for (std::size_t i = 0; i < a.items.size(); ++i)
            if (!same(a.items[i], b.items[i])) return false;
        return true;
    case Node::Type::Object:
        if (a.members.size() != b.members.size()) return false;
        for (std::size_t i = 0; i < a.members.size(); ++i)
            if (a.members[i].key != b.members[i].key || !same(a.members[i].value, b.members[i].value)) return false;
        return true;
    default: return true;
    }
}

// ---------------------------------------------------------------- pointers and changes

constexpr std::string_view every = "*";

struct Token {
    bool all = false;  // `*`
    std::string name;
};

inline std::string split_pointer(std::string_view p, std::vector<Token> &out) {
    out.clear();
    if (p.empty() || p.front() != '/') return "a path is a JSON Pointer starting with \"/\"";
    std::size_t pos = 1;
    for (;;) {
        std::size_t slash = p.find('/', pos);
        std::string_view raw = p.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
        Token t;
        if (raw == every) {
            t.all = true;
        } else {
            for (std::size_t i = 0; i < raw.size(); ++i) {
                if (raw[i] != '~') {
                    t.name += raw[i];
                } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
                    t.name += raw[++i] == '0' ? '~' : '/';
                } else {
                    return "\"~\" in a JSON Pointer is written \"~0\" (and \"/\" in a name \"~1\")";
                }
            }
        }
        out.push_back(std::move(t));
        if (slash == std::string_view::npos) break;
        pos = slash + 1;
    }
    return {};
}
struct Compiled {
    Change change;
    std::vector<Token> path;
    std::string new_name;  // field_renamed: the last token of NEW
    std::string raw_last, raw_new;  // those names as JSON strings, the keys of added or renamed fields
    std::string value_text, mapped_text;  // owned JSON texts the nodes below view
    Node value, mapped;
    bool has_value = false;
};

inline bool parse_json(std::string_view text, Node &n) {
    Parser p(text);
    return p.parse(n);
}


inline Node copy_into(const Node &n) { return n; }

inline bool in_scope(const Change &c, std::string_view method, std::string_view shape) {
    return c.method.empty() || (c.method == method && c.shape == shape);
}

inline bool index_of(const std::string &name, std::size_t size, std::size_t &at) {
    if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0')) return false;
    std::size_t v = 0;
    for (char ch : name) {
        if (ch < '0' || ch > '9') return false;
        v = v * 10 + static_cast<std::size_t>(ch - '0');
    }
    at = v;
    return v < size;
}

inline Member *find(Node &obj, const std::string &key) {
    for (Member &m : obj.members)
        if (m.key == key) return &m;
    return nullptr;
}

// Calls f(node) for every node `tokens[i..]` reaches from `n`.
template <class F>
inline void reach(Node &n, const std::vector<Token> &tokens, std::size_t i, std::size_t end, F &&f) {
    if (i == end) {
        f(n);
        return;
    }
    const Token &t = tokens[i];
    if (t.all) {
        if (n.type == Node::Type::Array)
            for (Node &item : n.items) reach(item, tokens, i + 1, end, f);
    } else if (n.type == Node::Type::Object) {
        // a name given twice (JSON allows it): each is changed alike, whichever one a reader keeps
        for (Member &m : n.members)
            if (m.key == t.name) reach(m.value, tokens, i + 1, end, f);
    } else if (n.type == Node::Type::Array) {
        std::size_t at = 0;
        if (index_of(t.name, n.items.size(), at)) reach(n.items[at], tokens, i + 1, end, f);
    }
}

inline void remove_field(Node &obj, const std::string &key, bool &changed) {
    std::size_t before = obj.members.size();
    std::erase_if(obj.members, [&](const Member &m) { return m.key == key; });
    changed |= obj.members.size() != before;
}

inline void add_field(Node &obj, const std::string &key, std::string_view raw_key, const Node &value, bool &changed) {
    if (find(obj, key)) return;
    Member m;
    m.raw_key = raw_key;
    m.key = key;
    m.value = copy_into(value);
    obj.members.push_back(std::move(m));
    changed = true;
}

inline void rename_field(Node &obj, const std::string &from, const std::string &to, std::string_view raw_to, bool &changed) {
    if (!find(obj, from)) return;
    // the renamed field takes the place of any already named so
    std::erase_if(obj.members, [&](const Member &m) { return m.key == to; });
    for (Member &m : obj.members) {
        if (m.key == from) {
            m.key = to;
            m.raw_key = raw_to;
        }
    }
    changed = true;
}

struct Applier {
    const Compiled &c;
    bool forward;
    bool changed = false;

    void run(Node &root) {
        const std::vector<Token> &t = c.path;
        if (c.change.kind == ChangeKind::ValueMapped) {
            const Node &from = forward ? c.value : c.mapped;
            const Node &to = forward ? c.mapped : c.value;
            reach(root, t, 0, t.size(), [&](Node &n) {
                if (same(n, from)) {
                    n = copy_into(to);
                    changed = true;
                }
            });
            return;
        }
        const std::string &last = t.back().name;
        reach(root, t, 0, t.size() - 1, [&](Node &parent) {
            if (parent.type != Node::Type::Object) return;
            switch (c.change.kind) {
            case ChangeKind::FieldAdded:
                if (!forward) remove_field(parent, last, changed);
                else if (c.has_value) add_field(parent, last, c.raw_last, c.value, changed);
                break;
            case ChangeKind::FieldRemoved:
                if (forward) remove_field(parent, last, changed);
                else if (c.has_value) add_field(parent, last, c.raw_last, c.value, changed);
                break;
            case ChangeKind::FieldRenamed:
                if (forward) rename_field(parent, last, c.new_name, c.raw_new, changed);
                else rename_field(parent, c.new_name, last, c.raw_last, changed);
                break;
            case ChangeKind::ValueMapped: break;
            }
        });
    }
};


// The old Migrator: the same constructor and migrate.
class Migrator {
public:
    explicit Migrator(std::vector<std::vector<Change>> changes) {
    versions_.resize(changes.size());
    for (std::size_t v = 0; v < changes.size(); ++v) {
        for (Change &c : changes[v]) {
            auto &k = versions_[v].emplace_back();
            k.change = std::move(c);
            if (!split_pointer(k.change.path, k.path).empty() || k.path.empty())
                throw std::invalid_argument("a change's path is not a JSON Pointer: " + k.change.path);
            k.raw_last = encode_string(k.path.back().name);
            if (k.change.kind == ChangeKind::FieldRenamed) {
                std::vector<Token> to;
                if (!split_pointer(k.change.new_path, to).empty())
                    throw std::invalid_argument("field_renamed's NEW is not a JSON Pointer: " + k.change.new_path);
                k.new_name = to.back().name;
                k.raw_new = encode_string(k.new_name);
            }
            k.value_text = k.change.value;
            k.mapped_text = k.change.mapped;
            if (!k.value_text.empty()) {
                if (!parse_json(k.value_text, k.value)) throw std::invalid_argument("a change's value is not JSON: " + k.value_text);
                k.has_value = true;
            }
            if (k.change.kind == ChangeKind::ValueMapped && !parse_json(k.mapped_text, k.mapped))
                throw std::invalid_argument("value_mapped's NEW is not JSON: " + k.mapped_text);
        }
    }
}


    using Result = signin::version::Migrator::Result;
    Result migrate(std::string_view body, std::size_t from, std::size_t to,
                                   std::string_view method, std::string_view shape,
                                   std::string &out) const {
    Node root;
    if (!parse_json(body, root)) return Result::Invalid;
    bool changed = false;
    const auto &vs = versions_;
    if (from < to) {
        for (std::size_t v = from + 1; v <= to && v < vs.size(); ++v) {
            for (const Compiled &c : vs[v]) {
                if (!in_scope(c.change, method, shape)) continue;
                Applier a{c, true};
                a.run(root);
                changed |= a.changed;
            }
        }
    } else {
        for (std::size_t v = from < vs.size() ? from : vs.size() - 1; v > to && v < vs.size(); --v) {
            for (auto it = vs[v].rbegin(); it != vs[v].rend(); ++it) {
                if (!in_scope(it->change, method, shape)) continue;
                Applier a{*it, false};
                a.run(root);
                changed |= a.changed;
            }
        }
    }
    if (!changed) return Result::Unchanged;
    out.clear();
    out.reserve(body.size() + 64);
    write(root, out);
    return Result::Rewritten;
}

private:
    std::vector<std::deque<Compiled>> versions_;
};

}  // namespace signin::version::oracle
