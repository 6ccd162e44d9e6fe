// A version group (an api_versions block): versions declared oldest first,
// one strategy, a default, per-route fallback flattened into one route table per version.
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/version/pattern.hpp"

namespace signin::version {

enum class Strategy { Path, Header, Accept, Custom };

struct RouteDecl {
    std::string method;
    Pattern pattern;
    std::string controller;  // the named location that answers, e.g. "@legacy_v1"
    std::size_t key = 0;     // the same number for the same method and shape in every version
};

struct VersionDecl {
    std::string name;
    std::optional<std::int64_t> deprecated;  // Unix seconds (RFC 9745 Deprecation)
    std::optional<std::int64_t> sunset;      // Unix seconds (RFC 8594 Sunset)
    bool gone = false;                       // retired at its sunset: 410 from then on
    std::vector<RouteDecl> routes;           // in declaration order
};

// What api_versions_report tells a client at one moment: the versions still answered, split into
// supported and deprecated (deprecation date reached), each "v1, v2"; a retired version is in
// neither. Valid until `until` (Unix seconds; the next date of the group that changes it, or
// INT64_MAX).
struct Report {
    std::string supported;
    std::string deprecated;
    std::int64_t until = 0;
};

// One route a version answers once fallback is applied.
struct Endpoint {
    const RouteDecl *route = nullptr;  // the declaration that answers (method, pattern, controller)
    std::size_t answered_by = 0;       // index of the version that declared it
};

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

// What to do with one request.
struct Decision {
    enum class Kind { Route, MethodNotAllowed, NotFound, MissingVersion, UnknownVersion };
    Kind kind = Kind::NotFound;
    std::size_t version = npos;        // the requested version, or the default; npos when none
    const Endpoint *endpoint = nullptr;  // Route
    std::string_view allow;            // MethodNotAllowed: "GET, HEAD, POST"
    std::string_view route_path;       // the path matched against the routes
    std::size_t strip_len = 0;         // path strategy: bytes of "/<version>" removed from the front
    std::string_view requested;        // UnknownVersion: the name asked for
    bool unnamed = false;              // the request named no version (the default, or none, answers)
};

class Group {
public:
    Group();
    ~Group();
    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;

    // Building; each throws ConfigError with a message for `nginx -t`.
    void set_strategy(Strategy strategy, std::string argument = {});
    void set_default(std::string name);  // checked by finish(): the version must be declared
    void set_fallback(bool on);
    // `gone`: the version is retired at its sunset (which it then needs).
    std::size_t add_version(std::string name, std::optional<std::int64_t> deprecated,
                            std::optional<std::int64_t> sunset, bool gone = false);
    void add_route(std::size_t version, std::string_view controller, std::string_view method,
                   std::string_view pattern);
    // Checks the whole group and builds the route tables; nothing may be added afterwards.
    void finish();

    Strategy strategy() const;
    const std::string &strategy_argument() const;
    bool fallback() const;
    const std::vector<VersionDecl> &versions() const;
    std::size_t default_version() const;  // npos when there is none
    std::size_t find(std::string_view name) const;  // npos when not declared
    // Every route version `v` answers: its own in declaration order, then the inherited ones,
    // newest version first.
    const std::vector<Endpoint> &endpoints(std::size_t v) const;

    // Whether version `v` is retired at `now` (declared `gone` and its sunset reached): every
    // request for it is answered 410 version_retired. The block stays, so newer versions still
    // fall back to its routes.
    bool retired(std::size_t v, std::int64_t now) const noexcept;
    // The 410's message: "API version v1 was retired on 2026-12-31".
    std::string retired_message(std::size_t v) const;
    // The supported and deprecated versions at `now`.
    Report report(std::int64_t now) const;

    // Path strategy: the first segment of `path` names the version only if it is declared.
    Decision decide_path(std::string_view method, std::string_view path) const noexcept;
    // Header, accept and custom strategies: `requested` is the value read ("" = none).
    Decision decide(std::string_view method, std::string_view path,
                    std::string_view requested) const noexcept;
    // A request that named no version (`unnamed`, as decide_path or decide gave it) answered in
    // version `v` instead of the default (the caller's pinned version): the same path, `v`'s
    // routes. `unnamed` itself when `v` is not a version of the group.
    Decision decide_as(std::string_view method, const Decision &unnamed, std::size_t v) const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The version an Accept header names: the first media range of the form
// application/vnd.<vendor>.<version>+json (type and vendor case-insensitive, version exact);
// empty when there is none.
std::string_view accept_version(std::string_view accept, std::string_view vendor) noexcept;

}  // namespace signin::version
