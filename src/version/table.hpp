// The route table of one version: a trie on path segments, built once at configuration time and
// then frozen into flat arrays (nodes, open-addressing literal slots with short keys inline,
// methods), so that a request touches few cache lines. Matching walks one node per segment (a
// hash lookup for the literal, else the one parameter child), so its cost grows with the
// request path only, never with the number of routes.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "signin/version/group.hpp"

namespace signin::version {

class RouteTable {
public:
    struct Lookup {
        const Endpoint *endpoint = nullptr;  // the route answering this method, if any
        std::string_view allow;              // methods answered at this path ("" = no route)
    };

    RouteTable();
    ~RouteTable();
    RouteTable(RouteTable &&) noexcept;
    RouteTable &operator=(RouteTable &&) noexcept;

    // `endpoints` must outlive the table. Where routes overlap, a literal segment is preferred
    // to a parameter, segment by segment from the left, for each method on its own.
    explicit RouteTable(const std::vector<Endpoint> &endpoints);

    // HEAD is answered by the GET route when no HEAD route is declared.
    Lookup match(std::string_view method, std::string_view path) const noexcept;

private:
    struct Flat;
    std::unique_ptr<Flat> flat_;
};

}  // namespace signin::version
