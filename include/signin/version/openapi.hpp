// OpenAPI 3.1 document of one version, and the JSON string quoting the glue's error bodies use.
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "signin/version/group.hpp"

namespace signin::version {

// `s` as a JSON string literal with its quotes; bytes that are not valid UTF-8 become U+FFFD.
std::string json_quote(std::string_view s);

// Where and how a document describes its API.
struct OpenApiOptions {
    std::string mount;          // where the routes are served ("/api"; "" = the site's root)
    bool controllers = false;   // x-controller: the internal location names, only on request
};

// The OpenAPI 3.1 document of version `v` of a finished group: every route the version answers,
// its own and those it inherits by fallback, each operation marked with the version that answers
// it (x-answered-by-version), with its path parameters, an operationId, the router's own JSON
// errors (4XX) and, with options.controllers, its controller (x-controller). `servers` says where
// a client calls it: {mount}/{version} for the path strategy (and {mount} for the default
// version); {mount} otherwise, with the version header declared as a parameter of each operation
// (header strategy) or the versioned media type as each answer's content (accept strategy).
std::string openapi_document(const Group &group, std::size_t v, std::string_view title,
                             const OpenApiOptions &options = {});

}  // namespace signin::version
