#include "version/table.hpp"

#include <array>
#include <functional>
#include <string>
#include <unordered_map>

namespace signin::version {

namespace {

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// The order methods are listed in an Allow header.
constexpr std::array<std::string_view, 8> kMethodOrder = {"GET",    "HEAD",   "POST",    "PUT",
                                                           "PATCH",  "DELETE", "OPTIONS", "TRACE"};

}  // namespace

struct RouteTable::Node {
    std::unordered_map<std::string, std::unique_ptr<Node>, StringHash, std::equal_to<>> literal;
    std::unique_ptr<Node> param;
    std::vector<const Endpoint *> methods;  // at most one per method
    std::string allow;

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

namespace {

using Node = RouteTable::Node;

std::unique_ptr<Node> copy(const Node &n) {
    auto c = std::make_unique<Node>();
    c->methods = n.methods;
    for (const auto &[key, child] : n.literal) {
        c->literal.emplace(key, copy(*child));
    }
    if (n.param) {
        c->param = copy(*n.param);
    }
    return c;
}

// Adds to `a` what `b` has and `a` lacks (a's routes win, method by method).
void merge_into(Node &a, const Node &b) {
    for (const Endpoint *e : b.methods) {
        a.add(e);
    }
    for (const auto &[key, child] : b.literal) {
        auto it = a.literal.find(key);
        if (it == a.literal.end()) {
            a.literal.emplace(key, copy(*child));
        } else {
            merge_into(*it->second, *child);
        }
    }
    if (b.param) {
        if (a.param) {
            merge_into(*a.param, *b.param);
        } else {
            a.param = copy(*b.param);
        }
    }
}

std::string allow_of(const Node &n) {
    std::string out;
    bool get = n.method("GET") != nullptr;
    for (auto m : kMethodOrder) {
        if (n.method(m) || (m == "HEAD" && get)) {
            if (!out.empty()) {
                out += ", ";
            }
            out += m;
        }
    }
    return out;
}

// Makes matching deterministic: below every literal child, the routes the parameter child
// would have matched are merged in with lower priority, so a walk never has to back up.
void compile(Node &n) {
    if (!n.methods.empty()) {
        n.allow = allow_of(n);
    }
    for (auto &[key, child] : n.literal) {
        if (n.param) {
            merge_into(*child, *n.param);
        }
        compile(*child);
    }
    if (n.param) {
        compile(*n.param);
    }
}

}  // namespace

RouteTable::RouteTable() = default;
RouteTable::~RouteTable() = default;
RouteTable::RouteTable(RouteTable &&) noexcept = default;
RouteTable &RouteTable::operator=(RouteTable &&) noexcept = default;

RouteTable::RouteTable(const std::vector<Endpoint> &endpoints) {
    root_ = std::make_unique<Node>();
    for (const Endpoint &e : endpoints) {
        Node *n = root_.get();
        for (const Segment &s : e.route->pattern.segments) {
            if (s.param) {
                if (!n->param) {
                    n->param = std::make_unique<Node>();
                }
                n = n->param.get();
            } else {
                auto &child = n->literal[s.text];
                if (!child) {
                    child = std::make_unique<Node>();
                }
                n = child.get();
            }
        }
        n->add(&e);
    }
    compile(*root_);
}

RouteTable::Lookup RouteTable::match(std::string_view method, std::string_view path) const noexcept {
    Lookup out;
    const Node *n = root_.get();
    if (!n) {
        return out;
    }
    bool walked = for_each_segment(path, [&n](std::string_view seg) {
        if (seg.empty()) {
            return false;
        }
        auto it = n->literal.find(seg);
        if (it != n->literal.end()) {
            n = it->second.get();
        } else if (n->param) {
            n = n->param.get();
        } else {
            return false;
        }
        return true;
    });
    if (!walked || n->methods.empty()) {
        return out;
    }
    out.allow = n->allow;
    out.endpoint = n->method(method);
    if (!out.endpoint && method == "HEAD") {
        out.endpoint = n->method("GET");
    }
    return out;
}

}  // namespace signin::version
