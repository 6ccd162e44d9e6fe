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

// The OpenAPI 3.1 document of version `v` of a finished group: every route the version answers,
// its own and those it inherits by fallback, each operation marked with the version that answers
// it (x-answered-by-version) and its controller (x-controller), with its path parameters.
std::string openapi_document(const Group &group, std::size_t v, std::string_view title);

}  // namespace signin::version
