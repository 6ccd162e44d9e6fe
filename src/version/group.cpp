#include "signin/version/group.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>

#include "signin/version/dates.hpp"
#include "table.hpp"

namespace signin::version {

namespace {

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

std::string route_key(std::string_view method, const Pattern &p) {
    return std::string(method) + ' ' + p.shape();
}

bool iequal(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) {
            return false;
        }
    }
    return true;
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

struct Group::Impl {
    Strategy strategy = Strategy::Path;
    std::string argument;
    bool fallback = true;
    std::string default_name;
    std::size_t default_index = npos;
    std::vector<VersionDecl> versions;
    std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> keys;  // "METHOD /shape" -> key
    std::vector<std::size_t> last_declared;  // per key: the last version declaring it, while building
    std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> index;
    std::vector<std::vector<Endpoint>> endpoints;
    std::vector<RouteTable> tables;
    bool finished = false;

    void building() const {
        if (finished) {
            throw ConfigError("the version group is already complete");
        }
    }
};

Group::Group() : impl_(std::make_unique<Impl>()) {}
Group::~Group() = default;

void Group::set_strategy(Strategy strategy, std::string argument) {
    impl_->building();
    if (strategy == Strategy::Header || strategy == Strategy::Accept) {
        if (argument.empty()) {
            throw ConfigError(strategy == Strategy::Header ? "strategy header needs a header name"
                                                           : "strategy accept needs a vendor prefix");
        }
        for (char c : argument) {
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || (strategy == Strategy::Accept && (c == '.' || c == '_'));
            if (!ok) {
                throw ConfigError("invalid " +
                                  std::string(strategy == Strategy::Header ? "header name" : "vendor prefix") +
                                  " \"" + argument + "\"");
            }
        }
        if (strategy == Strategy::Header) {
            std::transform(argument.begin(), argument.end(), argument.begin(),
                           [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
        }
    }
    impl_->strategy = strategy;
    impl_->argument = std::move(argument);
}

void Group::set_default(std::string name) {
    impl_->building();
    if (name.empty()) {
        throw ConfigError("empty default version name");
    }
    impl_->default_name = std::move(name);
}

void Group::set_fallback(bool on) {
    impl_->building();
    impl_->fallback = on;
}

std::size_t Group::add_version(std::string name, std::optional<std::int64_t> deprecated,
                               std::optional<std::int64_t> sunset, bool gone) {
    impl_->building();
    if (name.empty()) {
        throw ConfigError("empty version name");
    }
    for (char c : name) {
        if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '"' || c == '\\' || c == ',' ||
            static_cast<unsigned char>(c) >= 0x7f) {
            throw ConfigError("invalid character in version name \"" + name + "\"");
        }
    }
    if (impl_->index.count(name)) {
        throw ConfigError("version \"" + name + "\" is declared twice");
    }
    if (deprecated && sunset && *sunset < *deprecated) {
        throw ConfigError("version \"" + name + "\": sunset is before deprecation");
    }
    if (gone && !sunset) {
        throw ConfigError("version \"" + name + "\": \"gone\" needs sunset=DATE");
    }
    std::size_t i = impl_->versions.size();
    impl_->index.emplace(name, i);
    impl_->versions.push_back(VersionDecl{std::move(name), deprecated, sunset, gone, {}});
    return i;
}

void Group::add_route(std::size_t version, std::string_view controller, std::string_view method,
                      std::string_view pattern) {
    impl_->building();
    if (version >= impl_->versions.size()) {
        throw ConfigError("route outside a version");
    }
    if (controller.size() < 2 || controller.front() != '@') {
        throw ConfigError("controller \"" + std::string(controller) + "\" must name a named location (\"@name\")");
    }
    check_method(method);
    Pattern p = parse_pattern(pattern);
    auto &v = impl_->versions[version];
    std::size_t key = impl_->keys.emplace(route_key(method, p), impl_->keys.size()).first->second;
    auto &last = impl_->last_declared;
    if (key == last.size()) {
        last.push_back(npos);
    }
    if (last[key] == version) {
        throw ConfigError("duplicate route \"" + std::string(method) + " " + p.written + "\" in version \"" +
                          v.name + "\"");
    }
    last[key] = version;
    v.routes.push_back(RouteDecl{std::string(method), std::move(p), std::string(controller), key});
}

void Group::finish() {
    Impl &g = *impl_;
    g.building();
    if (g.versions.empty()) {
        throw ConfigError("the version group declares no version");
    }
    if (!g.default_name.empty()) {
        auto it = g.index.find(g.default_name);
        if (it == g.index.end()) {
            throw ConfigError("default version \"" + g.default_name + "\" is never declared");
        }
        g.default_index = it->second;
    }
    const std::size_t nkeys = g.keys.size();
    g.keys.clear();
    g.last_declared.clear();
    g.endpoints.resize(g.versions.size());
    std::vector<std::size_t> seen(nkeys, npos);  // seen[key] == v: version v already answers it
    for (std::size_t v = 0; v < g.versions.size(); ++v) {
        auto &list = g.endpoints[v];
        // this version's own routes first, then each earlier version's, newest first, per route
        for (std::size_t from = v + 1; from-- > 0;) {
            for (const RouteDecl &r : g.versions[from].routes) {
                if (seen[r.key] != v) {
                    seen[r.key] = v;
                    list.push_back(Endpoint{&r, from});
                }
            }
            if (!g.fallback) {
                break;
            }
        }
        g.tables.emplace_back(list);
    }
    g.finished = true;
}

Strategy Group::strategy() const { return impl_->strategy; }
const std::string &Group::strategy_argument() const { return impl_->argument; }
bool Group::fallback() const { return impl_->fallback; }
const std::vector<VersionDecl> &Group::versions() const { return impl_->versions; }
std::size_t Group::default_version() const { return impl_->default_index; }

std::size_t Group::find(std::string_view name) const {
    auto it = impl_->index.find(name);
    return it == impl_->index.end() ? npos : it->second;
}

const std::vector<Endpoint> &Group::endpoints(std::size_t v) const { return impl_->endpoints.at(v); }

bool Group::retired(std::size_t v, std::int64_t now) const noexcept {
    if (v >= impl_->versions.size()) {
        return false;
    }
    const VersionDecl &d = impl_->versions[v];
    return d.gone && d.sunset && now >= *d.sunset;
}

std::string Group::retired_message(std::size_t v) const {
    const VersionDecl &d = impl_->versions.at(v);
    return "API version " + d.name + " was retired on " + (d.sunset ? iso_date(*d.sunset) : std::string("?"));
}

Report Group::report(std::int64_t now) const {
    Report out;
    out.until = std::numeric_limits<std::int64_t>::max();
    auto later = [&](const std::optional<std::int64_t> &t) {
        if (t && *t > now && *t < out.until) {
            out.until = *t;
        }
    };
    for (std::size_t v = 0; v < impl_->versions.size(); ++v) {
        const VersionDecl &d = impl_->versions[v];
        later(d.deprecated);
        if (d.gone) {
            later(d.sunset);
        }
        if (retired(v, now)) {
            continue;
        }
        std::string &list = d.deprecated && now >= *d.deprecated ? out.deprecated : out.supported;
        list += (list.empty() ? "" : ", ") + d.name;
    }
    return out;
}

namespace {

void route(const RouteTable &table, std::string_view method, Decision &d) noexcept {
    auto found = table.match(method, d.route_path);
    if (found.endpoint) {
        d.kind = Decision::Kind::Route;
        d.endpoint = found.endpoint;
    } else if (!found.allow.empty()) {
        d.kind = Decision::Kind::MethodNotAllowed;
        d.allow = found.allow;
    } else {
        d.kind = Decision::Kind::NotFound;
    }
}

}  // namespace

Decision Group::decide_path(std::string_view method, std::string_view path) const noexcept {
    const Impl &g = *impl_;
    Decision d;
    d.route_path = path;
    if (!g.finished) {
        return d;
    }
    if (path.size() > 1 && path.front() == '/') {
        std::size_t end = path.find('/', 1);
        std::string_view first = path.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1);
        std::size_t v = find(first);
        if (v != npos) {
            d.version = v;
            d.strip_len = 1 + first.size();
            d.route_path = path.substr(d.strip_len);
            if (d.route_path.empty()) {
                d.route_path = "/";
            }
            route(g.tables[v], method, d);
            return d;
        }
    }
    d.unnamed = true;
    if (g.default_index == npos) {
        return d;  // no version and no default: 404
    }
    d.version = g.default_index;
    route(g.tables[d.version], method, d);
    return d;
}

Decision Group::decide_as(std::string_view method, const Decision &unnamed, std::size_t v) const noexcept {
    const Impl &g = *impl_;
    if (!g.finished || !unnamed.unnamed || v >= g.versions.size()) {
        return unnamed;
    }
    Decision d;
    d.unnamed = true;
    d.route_path = unnamed.route_path;
    d.version = v;
    route(g.tables[v], method, d);
    return d;
}

Decision Group::decide(std::string_view method, std::string_view path,
                       std::string_view requested) const noexcept {
    const Impl &g = *impl_;
    Decision d;
    d.route_path = path.empty() ? std::string_view("/") : path;
    if (!g.finished) {
        return d;
    }
    if (requested.empty()) {
        d.unnamed = true;
        if (g.default_index == npos) {
            d.kind = Decision::Kind::MissingVersion;
            return d;
        }
        d.version = g.default_index;
    } else {
        d.version = find(requested);
        if (d.version == npos) {
            d.kind = Decision::Kind::UnknownVersion;
            d.requested = requested;
            return d;
        }
    }
    route(g.tables[d.version], method, d);
    return d;
}

std::string_view accept_version(std::string_view accept, std::string_view vendor) noexcept {
    constexpr std::string_view type = "application/vnd.";
    constexpr std::string_view suffix = "+json";
    while (!accept.empty()) {
        std::size_t comma = accept.find(',');
        std::string_view range = accept.substr(0, comma);
        accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
        range = trim(range.substr(0, range.find(';')));
        if (range.size() <= type.size() + vendor.size() + 1 + suffix.size() ||
            !iequal(range.substr(0, type.size()), type) ||
            !iequal(range.substr(type.size(), vendor.size()), vendor) ||
            range[type.size() + vendor.size()] != '.' ||
            !iequal(range.substr(range.size() - suffix.size()), suffix)) {
            continue;
        }
        std::size_t start = type.size() + vendor.size() + 1;
        return range.substr(start, range.size() - suffix.size() - start);
    }
    return {};
}

}  // namespace signin::version
