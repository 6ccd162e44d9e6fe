// Version changes: parsing, checks and the migration of JSON bodies.
//
// A body is checked and read in one pass into a tree kept per thread (json_text.hpp): numbers and
// strings stay views of the original text, so a migrated body keeps every value exactly as the
// upstream or the client wrote it, and the parts no change touched are copied back as they came;
// only the changed parts are new text.
#include "signin/version/changes.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "json_text.hpp"
#include "signin/version/group.hpp"
#include "signin/version/pattern.hpp"

namespace signin::version {

using json::Doc;

namespace {


// ---------------------------------------------------------------- pointers and changes

constexpr std::string_view every = "*";

struct Token {
    bool all = false;  // `*`
    std::string name;
};

std::string split_pointer(std::string_view p, std::vector<Token> &out) {
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
    Doc value, mapped;
    bool has_value = false;
};

bool is_json(std::string_view text) {
    Doc d;
    return d.parse(text);
}

// Whether two JSON texts (valid ones) hold the same value.
bool same_json(std::string_view a, std::string_view b) {
    Doc x, y;
    x.parse(a);
    y.parse(b);
    return x.same(0, y, 0);
}

// The last segment differs: field_renamed keeps a field in its object.
bool same_parent(std::string_view a, std::string_view b) {
    return a.substr(0, a.rfind('/')) == b.substr(0, b.rfind('/'));
}

std::string take_json(std::string_view word, std::string_view what, std::string &out) {
    if (!is_json(word)) return std::string(what) + " is not JSON (write it as one quoted word): " + std::string(word);
    out = std::string(word);
    return {};
}

}  // namespace

std::string check_pointer(std::string_view pointer, bool field) {
    std::vector<Token> tokens;
    std::string err = split_pointer(pointer, tokens);
    if (!err.empty()) return err + ": " + std::string(pointer);
    if (field && tokens.back().all) return "a field's path ends in its name, not \"*\": " + std::string(pointer);
    for (const Token &t : tokens)
        if (!t.all && t.name.empty() && field) return "a path names no empty field: " + std::string(pointer);
    return {};
}

std::string parse_change(const std::vector<std::string> &words, Change &out) {
    out = Change{};
    if (words.empty()) return "an empty change";
    std::vector<std::string_view> args(words.begin() + 1, words.end());
    // the scope comes last: on METHOD ROUTE
    if (args.size() >= 3 && args[args.size() - 3] == "on") {
        out.method = std::string(args[args.size() - 2]);
        out.route = std::string(args.back());
        try {
            check_method(out.method);
            out.shape = parse_pattern(out.route).shape();
        } catch (const ConfigError &e) {
            return e.what();
        }
        args.resize(args.size() - 3);
    }
    const std::string &name = words[0];
    std::string err;
    if (name == "field_added" || name == "field_removed") {
        out.kind = name == "field_added" ? ChangeKind::FieldAdded : ChangeKind::FieldRemoved;
        std::string_view key = out.kind == ChangeKind::FieldAdded ? "default=" : "value=";
        if (args.empty() || args.size() > 2) return name + " takes PATH [" + std::string(key) + "JSON] [on METHOD ROUTE]";
        out.path = std::string(args[0]);
        if (!(err = check_pointer(out.path, true)).empty()) return err;
        if (args.size() == 2) {
            if (args[1].substr(0, key.size()) != key) return name + ": unknown argument " + std::string(args[1]);
            if (!(err = take_json(args[1].substr(key.size()), key.substr(0, key.size() - 1), out.value)).empty()) return err;
        }
        return {};
    }
    if (name == "field_renamed") {
        out.kind = ChangeKind::FieldRenamed;
        if (args.size() != 2) return "field_renamed takes OLD NEW [on METHOD ROUTE]";
        out.path = std::string(args[0]);
        out.new_path = std::string(args[1]);
        if (!(err = check_pointer(out.path, true)).empty()) return err;
        if (!(err = check_pointer(out.new_path, true)).empty()) return err;
        if (!same_parent(out.path, out.new_path))
            return "field_renamed keeps a field in its object: " + out.path + " and " + out.new_path + " differ before the last name";
        if (out.path == out.new_path) return "field_renamed to the same name: " + out.path;
        return {};
    }
    if (name == "value_mapped") {
        out.kind = ChangeKind::ValueMapped;
        if (args.size() != 3) return "value_mapped takes PATH OLD NEW [on METHOD ROUTE]";
        out.path = std::string(args[0]);
        if (!(err = check_pointer(out.path, false)).empty()) return err;
        // a word that is not JSON is a string: value_mapped /status active enabled
        auto json_or_string = [](std::string_view w) {
            return is_json(w) ? std::string(w) : json::encode_string(w);
        };
        out.value = json_or_string(args[1]);
        out.mapped = json_or_string(args[2]);
        if (same_json(out.value, out.mapped)) return "value_mapped maps a value onto itself: " + std::string(args[1]);
        return {};
    }
    return "unknown change " + name + " (field_added, field_removed, field_renamed, value_mapped)";
}

std::string check_routes(const std::vector<std::vector<Change>> &changes, const Group &group) {
    std::set<std::pair<std::string, std::string>> declared;
    for (const VersionDecl &v : group.versions())
        for (const RouteDecl &r : v.routes) declared.emplace(r.method, r.pattern.shape());
    for (const auto &version : changes)
        for (const Change &c : version)
            if (!c.method.empty() && !declared.count({c.method, c.shape}))
                return "no version declares the route " + c.method + " " + c.route + " of the change on " + c.path;
    return {};
}

namespace {

// Whether two pointers can reach the same place: token by token equal, or one of them `*`.
bool meet(const std::string &a, const std::string &b) {
    std::vector<Token> x, y;
    if (!split_pointer(a, x).empty() || !split_pointer(b, y).empty() || x.size() != y.size()) return a == b;
    for (std::size_t i = 0; i < x.size(); ++i)
        if (!x[i].all && !y[i].all && x[i].name != y[i].name) return false;
    return true;
}

}  // namespace

std::string check_chain(const std::vector<std::vector<Change>> &changes) {
    // the fields the chain knows to exist, per scope ("" = every route): path -> scope set
    std::multimap<std::string, std::string> known;
    auto overlaps = [](const std::string &a, const std::string &b) { return a.empty() || b.empty() || a == b; };
    auto is_known = [&](const std::string &path, const std::string &scope) {
        for (const auto &[field, where] : known)
            if (overlaps(where, scope) && meet(field, path)) return true;
        return false;
    };
    auto forget = [&](const std::string &path, const std::string &scope) {
        auto [lo, hi] = known.equal_range(path);
        // a change on one route takes the field away there only, not where every route has it
        for (auto it = lo; it != hi;) it = scope.empty() || it->second == scope ? known.erase(it) : std::next(it);
    };
    for (std::size_t v = 0; v < changes.size(); ++v) {
        const auto &list = changes[v];
        if (v == 0 && !list.empty())
            return "the oldest version has no older one to differ from: its change on " + list.front().path + " would never apply";
        for (std::size_t i = 0; i < list.size(); ++i) {
            const Change &c = list[i];
            std::string scope = c.method.empty() ? std::string() : c.method + " " + c.shape;
            for (std::size_t j = 0; j < i; ++j) {
                const Change &d = list[j];
                std::string dscope = d.method.empty() ? std::string() : d.method + " " + d.shape;
                if (!overlaps(scope, dscope)) continue;
                bool add_remove = (c.kind == ChangeKind::FieldAdded && d.kind == ChangeKind::FieldRemoved) ||
                                  (c.kind == ChangeKind::FieldRemoved && d.kind == ChangeKind::FieldAdded);
                if (add_remove && meet(c.path, d.path))
                    return "a version both adds and removes " + c.path + ": going back could not tell which";
                if (c.kind == ChangeKind::FieldRenamed && d.kind == ChangeKind::FieldRenamed &&
                    (meet(c.path, d.path) || meet(c.new_path, d.new_path) || meet(c.new_path, d.path) || meet(c.path, d.new_path)))
                    return "two renames of one version meet at " + (meet(c.path, d.path) || meet(c.path, d.new_path) ? c.path : c.new_path) +
                           ": going back could not tell them apart";
                if (c.kind == ChangeKind::ValueMapped && d.kind == ChangeKind::ValueMapped && meet(c.path, d.path)) {
                    bool from = same_json(c.value, d.value) || same_json(c.value, d.mapped);
                    if (from || same_json(c.mapped, d.mapped) || same_json(c.mapped, d.value))
                        return "value_mapped on " + c.path + " maps two values from or onto " +
                               (from ? c.value : c.mapped) + ": going back could not tell them apart";
                }
            }
            switch (c.kind) {
            case ChangeKind::FieldAdded:
                if (is_known(c.path, scope))
                    return "field_added " + c.path + ", a field that exists already (added or renamed to before)";
                known.emplace(c.path, scope);
                break;
            case ChangeKind::FieldRemoved: forget(c.path, scope); break;
            case ChangeKind::ValueMapped: break;
            case ChangeKind::FieldRenamed:
                if (is_known(c.new_path, scope))
                    return "field_renamed " + c.path + " onto " + c.new_path + ", a field that exists already";
                forget(c.path, scope);
                known.emplace(c.new_path, scope);
                break;
            }
        }
    }
    return {};
}

// ---------------------------------------------------------------- migration

struct Migrator::Impl {
    // a deque: the nodes and keys view the texts each Compiled owns, so none may move
    std::vector<std::deque<Compiled>> versions;

    // Applies the changes between `from` and `to` in scope to `root`; whether any changed it.
    bool apply(Doc &root, std::size_t from, std::size_t to, std::string_view method, std::string_view shape) const;
};

namespace {

bool in_scope(const Change &c, std::string_view method, std::string_view shape) {
    return c.method.empty() || (c.method == method && c.shape == shape);
}

// An array index token: digits, no leading zero.
bool index_of(const std::string &name, std::size_t &at) {
    if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0')) return false;
    std::size_t v = 0;
    for (char ch : name) {
        if (ch < '0' || ch > '9') return false;
        v = v * 10 + static_cast<std::size_t>(ch - '0');
    }
    at = v;
    return true;
}

bool has(Doc &d, std::uint32_t obj, const std::string &key) {
    for (std::uint32_t c = d.node(obj).first; c != Doc::none; c = d.node(c).next)
        if (d.key_is(c, key)) return true;
    return false;
}

// Calls f(node) for every node `tokens[i..end)` reaches from node `n`; f says whether it changed
// the node's value, and every container above a changed one is marked so.
template <class F>
bool reach(Doc &d, std::uint32_t n, const std::vector<Token> &tokens, std::size_t i, std::size_t end, F &&f) {
    if (i == end) return f(n);
    const Token &t = tokens[i];
    json::Type type = d.node(n).type;
    bool changed = false;
    if (t.all) {
        if (type == json::Type::Array)
            for (std::uint32_t c = d.node(n).first; c != Doc::none; c = d.node(c).next)
                changed |= reach(d, c, tokens, i + 1, end, f);
    } else if (type == json::Type::Object) {
        // a name given twice (JSON allows it): each is changed alike, whichever one a reader keeps
        for (std::uint32_t c = d.node(n).first; c != Doc::none; c = d.node(c).next)
            if (d.key_is(c, t.name)) changed |= reach(d, c, tokens, i + 1, end, f);
    } else if (type == json::Type::Array) {
        std::size_t at = 0;
        if (!index_of(t.name, at)) return false;
        std::uint32_t c = d.node(n).first;
        for (; c != Doc::none && at > 0; --at) c = d.node(c).next;
        if (c != Doc::none) changed = reach(d, c, tokens, i + 1, end, f);
    }
    if (changed) d.mark_dirty(n);
    return changed;
}

void add_field(Doc &d, std::uint32_t obj, const std::string &key, std::string_view raw_key, const Doc &value, bool &changed) {
    if (has(d, obj, key)) return;
    std::uint32_t m = d.copy(value, 0);
    d.set_key(m, raw_key);
    d.append(obj, m);
    d.mark_dirty(obj);
    changed = true;
}

void rename_field(Doc &d, std::uint32_t obj, const std::string &from, const std::string &to, std::string_view raw_to, bool &changed) {
    if (!has(d, obj, from)) return;
    // the renamed field takes the place of any already named so
    d.remove(obj, to);
    for (std::uint32_t c = d.node(obj).first; c != Doc::none; c = d.node(c).next)
        if (d.key_is(c, from)) d.set_key(c, raw_to);
    d.mark_dirty(obj);
    changed = true;
}

struct Applier {
    const Compiled &c;
    bool forward;
    bool changed = false;

    void run(Doc &d) {
        const std::vector<Token> &t = c.path;
        if (c.change.kind == ChangeKind::ValueMapped) {
            const Doc &from = forward ? c.value : c.mapped;
            const Doc &to = forward ? c.mapped : c.value;
            reach(d, 0, t, 0, t.size(), [&](std::uint32_t n) {
                if (!d.same(n, from, 0)) return false;
                d.assign(n, d.copy(to, 0));
                changed = true;
                return true;
            });
            return;
        }
        const std::string &last = t.back().name;
        reach(d, 0, t, 0, t.size() - 1, [&](std::uint32_t parent) {
            if (d.node(parent).type != json::Type::Object) return false;
            bool before = changed;
            changed = false;
            switch (c.change.kind) {
            case ChangeKind::FieldAdded:
                if (!forward) changed |= d.remove(parent, last);
                else if (c.has_value) add_field(d, parent, last, c.raw_last, c.value, changed);
                break;
            case ChangeKind::FieldRemoved:
                if (forward) changed |= d.remove(parent, last);
                else if (c.has_value) add_field(d, parent, last, c.raw_last, c.value, changed);
                break;
            case ChangeKind::FieldRenamed:
                if (forward) rename_field(d, parent, last, c.new_name, c.raw_new, changed);
                else rename_field(d, parent, c.new_name, last, c.raw_last, changed);
                break;
            case ChangeKind::ValueMapped: break;
            }
            bool here = changed;
            changed = before || here;
            return here;
        });
    }
};

// The tree of the bodies this thread migrates, and the text of the last one it wrote, their
// memory kept from one body to the next (up to 8 MiB each: a body of about 1 MiB).
struct Scratch {
    static constexpr std::size_t keep = 8 * 1024 * 1024;
    Doc doc;
    std::string out;

    // After a body: its tree forgotten; memory beyond `keep` given back.
    void clear() {
        doc.clear(keep);
        if (out.size() > keep) std::string().swap(out);
    }
};

Scratch &scratch() {
    thread_local Scratch s;
    return s;
}

}  // namespace

Migrator::Migrator(std::vector<std::vector<Change>> changes) : impl_(std::make_unique<Impl>()) {
    impl_->versions.resize(changes.size());
    for (std::size_t v = 0; v < changes.size(); ++v) {
        for (Change &c : changes[v]) {
            auto &k = impl_->versions[v].emplace_back();
            k.change = std::move(c);
            if (!split_pointer(k.change.path, k.path).empty() || k.path.empty())
                throw std::invalid_argument("a change's path is not a JSON Pointer: " + k.change.path);
            k.raw_last = json::encode_string(k.path.back().name);
            if (k.change.kind == ChangeKind::FieldRenamed) {
                std::vector<Token> to;
                if (!split_pointer(k.change.new_path, to).empty())
                    throw std::invalid_argument("field_renamed's NEW is not a JSON Pointer: " + k.change.new_path);
                k.new_name = to.back().name;
                k.raw_new = json::encode_string(k.new_name);
            }
            k.value_text = k.change.value;
            k.mapped_text = k.change.mapped;
            if (!k.value_text.empty()) {
                if (!k.value.parse(k.value_text)) throw std::invalid_argument("a change's value is not JSON: " + k.value_text);
                k.has_value = true;
            }
            if (k.change.kind == ChangeKind::ValueMapped && !k.mapped.parse(k.mapped_text))
                throw std::invalid_argument("value_mapped's NEW is not JSON: " + k.mapped_text);
        }
    }
}

Migrator::~Migrator() = default;

bool Migrator::applies(std::size_t from, std::size_t to, std::string_view method,
                       std::string_view shape) const noexcept {
    std::size_t lo = from < to ? from : to, hi = from < to ? to : from;
    for (std::size_t v = lo + 1; v <= hi && v < impl_->versions.size(); ++v)
        for (const Compiled &c : impl_->versions[v])
            if (in_scope(c.change, method, shape)) return true;
    return false;
}

bool Migrator::Impl::apply(Doc &root, std::size_t from, std::size_t to, std::string_view method,
                           std::string_view shape) const {
    bool changed = false;
    const auto &vs = versions;
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
    return changed;
}

Migrator::Result Migrator::migrate(std::string_view body, std::size_t from, std::size_t to,
                                   std::string_view method, std::string_view shape,
                                   std::string &out) const {
    std::string_view text;
    Result r = migrate(body, from, to, method, shape, text);
    if (r == Result::Rewritten) out.assign(text);
    return r;
}

Migrator::Result Migrator::migrate(std::string_view body, std::size_t from, std::size_t to,
                                   std::string_view method, std::string_view shape,
                                   std::string_view &out) const {
    Scratch &s = scratch();
    struct Clear {
        Scratch &s;
        ~Clear() { s.clear(); }
    } clear{s};
    if (!s.doc.parse(body)) return Result::Invalid;
    if (!impl_->apply(s.doc, from, to, method, shape)) return Result::Unchanged;
    std::size_t len = s.doc.write_at(0, s.out);  // first: it may move the buffer
    out = std::string_view(s.out.data(), len);
    return Result::Rewritten;
}

}  // namespace signin::version
