// JSON texts for the version changes: the check of a whole text into a tape of its tokens, and
// the tree expanded from the tape on demand (json_text.hpp says why).
#include "json_text.hpp"

#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace signin::version::json {

namespace {

constexpr int max_depth = 256;

void put_utf8(std::string &out, std::uint32_t cp) {
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

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

Type type_of(char c) {
    switch (c) {
    case 'n': return Type::Null;
    case 'f': return Type::False;
    case 't': return Type::True;
    case '"': return Type::String;
    case '[': return Type::Array;
    case '{': return Type::Object;
    default: return Type::Number;
    }
}

bool keys_equal(std::string_view a, bool a_escaped, std::string_view b, bool b_escaped) {
    if (!a_escaped && !b_escaped) return a == b;
    return decode_string(a) == decode_string(b);
}

}  // namespace

std::string decode_string(std::string_view raw) {
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

std::string encode_string(std::string_view text) {
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

// ---------------------------------------------------------------- reading a text

// One pass over the text: each value becomes a node, linked to its container's others.
class Reader {
public:
    Reader(std::string_view text, std::vector<Doc::Node> &nodes) : s_(text), nodes_(nodes) {}

    bool run() {
        skip();
        if (value(0) == Doc::none) return false;
        skip();
        return pos_ == s_.size();
    }

private:
    std::string_view s_;
    std::vector<Doc::Node> &nodes_;
    std::size_t pos_ = 0;

    void skip() {
        // every blank is below '!': most tokens follow the one before with no blank at all
        while (pos_ < s_.size() && static_cast<unsigned char>(s_[pos_]) <= ' ' &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    // Moves to the next quote, backslash or control character of a string, or to the end.
    [[gnu::always_inline]] void to_special() {
        const char *p = s_.data();
        std::size_t n = s_.size();
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
        const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80)), below = _mm_set1_epi8(static_cast<char>(0x20 ^ 0x80));
        while (pos_ + 16 <= n) {
            __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + pos_));
            // a control byte (< 0x20 unsigned) is, its top bit flipped, below 0xA0 signed
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmplt_epi8(_mm_xor_si128(v, flip), below));
            int mask = _mm_movemask_epi8(hit);
            if (mask != 0) {
                pos_ += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
                return;
            }
            pos_ += 16;
        }
#endif
        while (pos_ < n) {
            auto c = static_cast<unsigned char>(p[pos_]);
            if (c == '"' || c == '\\' || c < 0x20) return;
            ++pos_;
        }
    }

    // A string token from its opening quote; `escaped` is set when it holds a backslash.
    [[gnu::always_inline]] bool string(bool &escaped) {
        ++pos_;
        for (;;) {
            to_special();
            if (pos_ >= s_.size()) return false;
            auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return true;
            }
            if (c < 0x20) return false;
            escaped = true;
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
            ++pos_;
        }
    }

    bool digits() {
        std::size_t start = pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        return pos_ > start;
    }

    bool number() {
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
        return true;
    }

    // The items (or members: key, then value) of container `at` up to its closing bracket.
    bool items(std::uint32_t at, int depth, bool object) {
        char close = object ? '}' : ']';
        ++pos_;
        skip();
        if (pos_ < s_.size() && s_[pos_] == close) {
            ++pos_;
            return true;
        }
        for (std::uint32_t prev = Doc::none;;) {
            skip();
            std::size_t key = pos_, key_end = pos_;
            bool escaped = false;
            if (object) {
                if (pos_ >= s_.size() || s_[pos_] != '"' || !string(escaped)) return false;
                key_end = pos_;
                skip();
                if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
                skip();
            }
            std::uint32_t v = value(depth + 1);
            if (v == Doc::none) return false;
            Doc::Node &n = nodes_[v];
            if (object) {
                n.key = s_.data() + key;
                n.key_len = static_cast<std::uint32_t>(key_end - key);
                n.key_escaped = escaped;
            }
            (prev == Doc::none ? nodes_[at].first : nodes_[prev].next) = v;
            prev = v;
            nodes_[at].last = v;
            skip();
            if (pos_ >= s_.size()) return false;
            if (s_[pos_] == close) {
                ++pos_;
                return true;
            }
            if (s_[pos_++] != ',') return false;
        }
    }

    // The node of the value at pos_, or none.
    std::uint32_t value(int depth) {
        if (pos_ >= s_.size() || depth > max_depth) return Doc::none;
        auto at = static_cast<std::uint32_t>(nodes_.size());
        std::size_t start = pos_;
        char c = s_[pos_];
        Type type = type_of(c);
        nodes_.emplace_back();
        nodes_[at].type = type;
        bool ok = false, escaped = false;
        switch (c) {
        case 'n': ok = literal("null"); break;
        case 't': ok = literal("true"); break;
        case 'f': ok = literal("false"); break;
        case '"': ok = string(escaped); break;
        case '[': ok = items(at, depth, false); break;
        case '{': ok = items(at, depth, true); break;
        default: ok = (c == '-' || (c >= '0' && c <= '9')) && number(); break;
        }
        if (!ok) return Doc::none;
        nodes_[at].raw = s_.data() + start;
        nodes_[at].raw_len = static_cast<std::uint32_t>(pos_ - start);
        return at;
    }
};

// ---------------------------------------------------------------- the tree

bool Doc::parse(std::string_view text) {
    nodes_.clear();
    // lengths are 32 bits: a body of 4 GiB is not one this migrates
    if (text.size() >= none) return false;
    text_ = text;
    return Reader(text, nodes_).run();
}

void Doc::clear(std::size_t keep) {
    nodes_.clear();
    text_ = {};
    if (nodes_.capacity() * sizeof(Node) > keep) std::vector<Node>().swap(nodes_);
}

bool Doc::key_decoded_is(const Node &n, std::string_view name) { return decode_string(n.key_text()) == name; }

std::uint32_t Doc::copy(const Doc &from, std::uint32_t i) {
    Node n = from.nodes_[i];
    n.key = nullptr;
    n.key_len = 0;
    n.key_escaped = false;
    n.next = n.first = n.last = none;
    n.moved = true;
    auto at = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(n);
    for (std::uint32_t c = from.nodes_[i].first; c != none; c = from.nodes_[c].next) {
        std::uint32_t k = copy(from, c);
        nodes_[k].key = from.nodes_[c].key;
        nodes_[k].key_len = from.nodes_[c].key_len;
        nodes_[k].key_escaped = from.nodes_[c].key_escaped;
        append(at, k);
    }
    return at;
}

void Doc::append(std::uint32_t i, std::uint32_t child) {
    Node &n = nodes_[i];
    nodes_[child].next = none;
    (n.last == none ? n.first : nodes_[n.last].next) = child;
    n.last = child;
}

bool Doc::remove(std::uint32_t i, std::string_view name) {
    bool removed = false;
    std::uint32_t prev = none;
    for (std::uint32_t c = nodes_[i].first; c != none; c = nodes_[c].next) {
        if (!key_is(c, name)) {
            prev = c;
            continue;
        }
        (prev == none ? nodes_[i].first : nodes_[prev].next) = nodes_[c].next;
        if (nodes_[i].last == c) nodes_[i].last = prev;
        removed = true;
    }
    nodes_[i].dirty |= removed;
    return removed;
}

void Doc::assign(std::uint32_t i, std::uint32_t v) {
    Node &n = nodes_[i];
    const Node &src = nodes_[v];
    n.raw = src.raw;
    n.raw_len = src.raw_len;
    n.type = src.type;
    n.first = src.first;
    n.last = src.last;
    n.dirty = src.dirty;
    n.moved = true;
}

void Doc::set_key(std::uint32_t i, std::string_view raw_key) {
    nodes_[i].key = raw_key.data();
    nodes_[i].key_len = static_cast<std::uint32_t>(raw_key.size());
    nodes_[i].key_escaped = raw_key.find('\\') != std::string_view::npos;
    nodes_[i].moved = true;
}

bool Doc::same_children(std::uint32_t i, const Doc &b, std::uint32_t j, bool members) const {
    std::uint32_t x = nodes_[i].first, y = b.nodes_[j].first;
    for (; x != none && y != none; x = nodes_[x].next, y = b.nodes_[y].next) {
        const Node &m = nodes_[x], &o = b.nodes_[y];
        if (members && !keys_equal(m.key_text(), m.key_escaped, o.key_text(), o.key_escaped)) return false;
        if (!same(x, b, y)) return false;
    }
    return x == none && y == none;
}

bool Doc::same(std::uint32_t i, const Doc &b, std::uint32_t j) const {
    const Node &x = nodes_[i], &y = b.nodes_[j];
    if (x.type != y.type) return false;
    switch (x.type) {
    case Type::Number: return x.text() == y.text();
    case Type::String:
        if (x.text() == y.text()) return true;
        // without escapes the text is the value: no need to decode
        if (x.text().find('\\') == std::string_view::npos && y.text().find('\\') == std::string_view::npos) return false;
        return decode_string(x.text()) == decode_string(y.text());
    case Type::Array: return same_children(i, b, j, false);
    case Type::Object: return same_children(i, b, j, true);
    default: return true;
    }
}

// The output buffer, grown as needed.
struct Doc::Out {
    std::string &s;
    char *at;

    void put(const char *p, std::size_t len) {
        if (static_cast<std::size_t>(s.data() + s.size() - at) < len) [[unlikely]]
            grow(len);
        std::memcpy(at, p, len);
        at += len;
    }
    [[gnu::noinline]] void grow(std::size_t len) {
        std::size_t used = static_cast<std::size_t>(at - s.data());
        s.resize(s.size() * 2 + len);
        at = s.data() + used;
    }
    void put(char c) { put(&c, 1); }
};

std::size_t Doc::write_at(std::uint32_t i, std::string &buf) const {
    // room for the text as read and some more; Out grows it past that
    if (buf.size() < nodes_[i].raw_len + 256) buf.resize(nodes_[i].raw_len + 256);
    Out o{buf, buf.data()};
    write_node(i, o);
    return static_cast<std::size_t>(o.at - buf.data());
}

// A changed container: its items or members in order, the changed ones written anew, and each
// stretch of those still side by side as read copied as one piece, separators as they were.
void Doc::write_node(std::uint32_t i, Out &out) const {
    const Node &n = nodes_[i];
    if (!n.dirty) {
        out.put(n.raw, n.raw_len);
        return;
    }
    bool object = n.type == Type::Object;
    // a piece of the text read (a copy of a change's value lies elsewhere, never in it)
    auto inside = [&](const char *p) {
        auto at = reinterpret_cast<std::uintptr_t>(p), begin = reinterpret_cast<std::uintptr_t>(text_.data());
        return at >= begin && at < begin + text_.size();
    };
    // the text between two pieces read side by side: blanks and one comma
    auto adjacent = [&](const char *end, const char *next) {
        if (!inside(end) || !inside(next) || next < end || next - end > 16) return false;
        int commas = 0;
        for (const char *p = end; p < next; ++p) {
            if (*p == ',') ++commas;
            else if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') return false;
        }
        return commas == 1;
    };
    out.put(object ? '{' : '[');
    const char *run = nullptr, *run_end = nullptr;
    bool first = true;
    auto flush = [&] {
        if (run == nullptr) return;
        if (!first) out.put(',');
        first = false;
        out.put(run, static_cast<std::size_t>(run_end - run));
        run = nullptr;
    };
    for (std::uint32_t c = n.first; c != none; c = nodes_[c].next) {
        const Node &m = nodes_[c];
        const char *start = object ? m.key : m.raw;
        if (!m.moved && !m.dirty && inside(start)) {
            if (run == nullptr || !adjacent(run_end, start)) {
                flush();
                run = start;
            }
            run_end = m.raw + m.raw_len;
            continue;
        }
        flush();
        if (!first) out.put(',');
        first = false;
        if (object) {
            out.put(m.key, m.key_len);
            out.put(':');
        }
        write_node(c, out);
    }
    flush();
    out.put(object ? '}' : ']');
}

}  // namespace signin::version::json
