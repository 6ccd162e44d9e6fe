#include "table.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>

namespace signin::version {

namespace {

// The order methods are listed in an Allow header.
constexpr std::array<std::string_view, 8> kMethodOrder = {"GET",    "HEAD",   "POST",    "PUT",
                                                           "PATCH",  "DELETE", "OPTIONS", "TRACE"};

// The trie while it is built (nodes live in the Builder; keys view the patterns' text, which
// outlives the build); frozen into RouteTable::Flat afterwards.
struct Node {
    std::unordered_map<std::string_view, Node *> literal;
    Node *param = nullptr;
    std::vector<const Endpoint *> methods;  // at most one per method

    const Endpoint *method(std::string_view m) const noexcept {
        for (const Endpoint *e : methods) {
            if (e->route->method == m) {
                return e;
            }
        }
        return nullptr;
    }

    void add(const Endpoint *e) {
        if (!method(e->route->method)) {
            methods.push_back(e);
        }
    }
};

struct Builder {
    std::deque<Node> nodes;

    Node *make() { return &nodes.emplace_back(); }

    // The deterministic trie of an ordered list of alternatives (highest priority first): the
    // routes a walk may still reach after the segments so far. A literal segment `k` continues
    // in each alternative's literal child `k` and then its parameter child, in the alternatives'
    // order; any other segment continues in their parameter children. So a literal wins over a
    // parameter segment by segment from the left, and a route of a lower alternative is reached
    // only where no higher one answers (method by method: add() keeps the first). Matching then
    // walks one node per segment and never backs up. Lists seen before are built once.
    Node *resolve(const std::vector<const Node *> &alts) {
        if (alts.size() == 1 && unchanged(alts[0])) {
            return const_cast<Node *>(alts[0]);  // the builder's own node, as every resolved one
        }
        auto known = resolved.find(alts);
        if (known != resolved.end()) {
            return known->second;
        }
        Node *d = make();
        resolved.emplace(alts, d);
        for (const Node *n : alts) {
            for (const Endpoint *e : n->methods) {
                d->add(e);
            }
        }
        std::vector<std::string_view> keys;
        for (const Node *n : alts) {
            for (const auto &kv : n->literal) {
                if (!d->literal.count(kv.first)) {
                    d->literal.emplace(kv.first, nullptr);
                    keys.push_back(kv.first);
                }
            }
        }
        for (std::string_view k : keys) {
            std::vector<const Node *> next;
            for (const Node *n : alts) {
                if (auto it = n->literal.find(k); it != n->literal.end()) {
                    next.push_back(it->second);
                }
                if (n->param) {
                    next.push_back(n->param);
                }
            }
            d->literal[k] = resolve(next);
        }
        std::vector<const Node *> params;
        for (const Node *n : alts) {
            if (n->param) {
                params.push_back(n->param);
            }
        }
        if (!params.empty()) {
            d->param = resolve(params);
        }
        return d;
    }

    // Whether the trie of one alternative is already deterministic: no node below n (n
    // included) has both literal children and a parameter child, the only place where resolve
    // merges lists. Then n is its own resolved node, with nothing copied: most route sets are
    // that, and copying every node anyway (with resolve's memo and the frees after) made a large
    // route set take several times longer at nginx -t than building the trie itself.
    bool unchanged(const Node *n) {
        if (auto known = deterministic.find(n); known != deterministic.end()) {
            return known->second;
        }
        bool same = !(n->param && !n->literal.empty());
        for (auto it = n->literal.begin(); same && it != n->literal.end(); ++it) {
            same = unchanged(it->second);
        }
        if (same && n->param) {
            same = unchanged(n->param);
        }
        deterministic.emplace(n, same);
        return same;
    }

    std::map<std::vector<const Node *>, Node *> resolved;
    std::unordered_map<const Node *, bool> deterministic;
};

constexpr std::uint32_t kNone = 0xffffffffu;

std::uint64_t fnv1a(std::string_view s) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

int method_id(std::string_view m) noexcept {
    for (std::size_t i = 0; i < kMethodOrder.size(); ++i) {
        if (kMethodOrder[i] == m) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

}  // namespace

struct RouteTable::Flat {
    struct FlatNode {
        std::uint32_t slots = 0;       // first literal slot
        std::uint32_t mask = 0;        // slot count - 1 (slot count is a power of two); no slots: 0 with slots == kNone
        std::uint32_t param = kNone;   // parameter child
        std::uint32_t methods = 0;     // first method entry
        std::uint32_t nmethods = 0;
        std::uint32_t allow = kNone;   // index into allows
    };
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t child = kNone;   // kNone: empty slot
        std::uint32_t len = 0;
        std::uint64_t offset = 0;      // key bytes in `keys`
    };
    struct Method {
        int id;
        const Endpoint *endpoint;
    };
    std::vector<FlatNode> nodes;  // nodes[0] is the root
    std::vector<Slot> slots;
    std::vector<Method> methods;
    std::vector<std::string> allows;  // one per distinct set of methods
    std::array<std::uint32_t, 256> allow_of_set{};  // method bit set -> index into allows + 1
    std::string keys;

    // "GET, HEAD, POST" for a set of method ids (HEAD wherever GET is).
    std::uint32_t allow_index(unsigned set) {
        if (set & 1u) {
            set |= 2u;
        }
        std::uint32_t &slot = allow_of_set[set & 0xffu];
        if (slot == 0) {
            std::string text;
            for (std::size_t i = 0; i < kMethodOrder.size(); ++i) {
                if (set & (1u << i)) {
                    text += text.empty() ? "" : ", ";
                    text += kMethodOrder[i];
                }
            }
            allows.push_back(std::move(text));
            slot = static_cast<std::uint32_t>(allows.size());
        }
        return slot - 1;
    }

    std::unordered_map<const Node *, std::uint32_t> frozen;  // a node reached by several paths is one

    std::uint32_t freeze(const Node &n) {
        if (auto it = frozen.find(&n); it != frozen.end()) {
            return it->second;
        }
        auto index = static_cast<std::uint32_t>(nodes.size());
        frozen.emplace(&n, index);
        nodes.emplace_back();
        FlatNode f;
        f.methods = static_cast<std::uint32_t>(methods.size());
        f.nmethods = static_cast<std::uint32_t>(n.methods.size());
        unsigned set = 0;
        for (const Endpoint *e : n.methods) {
            int id = method_id(e->route->method);
            methods.push_back(Method{id, e});
            set |= id >= 0 ? 1u << id : 0u;
        }
        if (!n.methods.empty()) {
            f.allow = allow_index(set);
        }
        if (n.literal.empty()) {
            f.slots = kNone;
        } else {
            std::size_t count = 2;
            while (count < n.literal.size() * 2) {
                count *= 2;
            }
            f.slots = static_cast<std::uint32_t>(slots.size());
            f.mask = static_cast<std::uint32_t>(count - 1);
            slots.resize(slots.size() + count);
            for (const auto &[key, child] : n.literal) {
                std::uint64_t h = fnv1a(key);
                std::size_t i = h & f.mask;
                while (slots[f.slots + i].child != kNone) {
                    i = (i + 1) & f.mask;
                }
                Slot slot;
                slot.hash = h;
                slot.len = static_cast<std::uint32_t>(key.size());
                slot.offset = keys.size();
                keys += key;
                slot.child = freeze(*child);
                slots[f.slots + i] = slot;
            }
        }
        if (n.param) {
            f.param = freeze(*n.param);
        }
        nodes[index] = f;
        return index;
    }
};

RouteTable::RouteTable() = default;
RouteTable::~RouteTable() = default;
RouteTable::RouteTable(RouteTable &&) noexcept = default;
RouteTable &RouteTable::operator=(RouteTable &&) noexcept = default;

RouteTable::RouteTable(const std::vector<Endpoint> &endpoints) {
    Builder b;
    Node *root = b.make();
    for (const Endpoint &e : endpoints) {
        Node *n = root;
        for (const Segment &s : e.route->pattern.segments) {
            if (s.param) {
                if (!n->param) {
                    n->param = b.make();
                }
                n = n->param;
            } else {
                Node *&child = n->literal[s.text];
                if (!child) {
                    child = b.make();
                }
                n = child;
            }
        }
        n->add(&e);
    }
    const Node *matcher = b.resolve({root});
    flat_ = std::make_unique<Flat>();
    flat_->nodes.reserve(b.nodes.size());
    flat_->freeze(*matcher);
}

RouteTable::Lookup RouteTable::match(std::string_view method, std::string_view path) const noexcept {
    Lookup out;
    if (!flat_) {
        return out;
    }
    const Flat &t = *flat_;
    const Flat::FlatNode *n = &t.nodes[0];
    bool walked = for_each_segment(path, [&t, &n](std::string_view seg) {
        if (seg.empty()) {
            return false;
        }
        if (n->slots != kNone) {
            std::uint64_t h = fnv1a(seg);
            for (std::size_t i = h & n->mask;; i = (i + 1) & n->mask) {
                const Flat::Slot &slot = t.slots[n->slots + i];
                if (slot.child == kNone) {
                    break;
                }
                if (slot.hash == h && slot.len == seg.size() &&
                    t.keys.compare(slot.offset, slot.len, seg) == 0) {
                    n = &t.nodes[slot.child];
                    return true;
                }
            }
        }
        if (n->param == kNone) {
            return false;
        }
        n = &t.nodes[n->param];
        return true;
    });
    if (!walked || n->nmethods == 0) {
        return out;
    }
    out.allow = t.allows[n->allow];
    int id = method_id(method);
    const Flat::Method *first = &t.methods[n->methods];
    const Flat::Method *last = first + n->nmethods;
    for (const Flat::Method *m = first; m != last; ++m) {
        if (m->id == id) {
            out.endpoint = m->endpoint;
            return out;
        }
    }
    if (id == 1) {  // HEAD: the GET route
        for (const Flat::Method *m = first; m != last; ++m) {
            if (m->id == 0) {
                out.endpoint = m->endpoint;
                return out;
            }
        }
    }
    return out;
}

}  // namespace signin::version
