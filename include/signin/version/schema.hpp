// The upstream's own OpenAPI document (api_versions_schema) made into one document per version,
// each showing that version's own field names, and the list of changes between versions.
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "signin/version/changes.hpp"
#include "signin/version/group.hpp"

namespace signin::version {

class UpstreamSchema {
public:
    // Parses the upstream's OpenAPI document (JSON); throws ConfigError when it is not JSON, not
    // an object with "paths", or names a component "RouterError" (the router's own).
    explicit UpstreamSchema(std::string_view json_text);
    ~UpstreamSchema();
    UpstreamSchema(const UpstreamSchema &) = delete;
    UpstreamSchema &operator=(const UpstreamSchema &) = delete;

    // The router's document of version `v` (openapi_document's text) with, for each of its
    // operations the upstream describes (same method, same path shape, the upstream's path with
    // or without `mount` in front), the upstream's request body, answers, summary, description
    // and non-path parameters, their schemas carried from the upstream's version to `v` through
    // `changes` (changes[k]: version k's, oldest first) the way bodies are migrated: back through
    // each newer version's changes in reverse, or forward. Referenced components a change reaches
    // into are copied into the operation first, so each operation keeps its own shape; the
    // upstream's components are kept beside the router's.
    std::string document(std::string_view router_doc, const Group &group, std::size_t v, std::size_t upstream,
                         const std::vector<std::vector<Change>> &changes, std::string_view mount) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The changes between versions as JSON: {"versions": [{"version": "v2", "previous": "v1",
// "changes": [{"change": "field_renamed", "path": "/name", "new_path": "/full_name",
// "on": {"method": "GET", "route": "/users/:id"}}, ...]}, ...]}, oldest first; `value`,
// `default` and `mapped` are the JSON values as configured.
std::string changes_json(const Group &group, const std::vector<std::vector<Change>> &changes);
// The same as a Markdown changelog, newest version first.
std::string changes_markdown(const Group &group, const std::vector<std::vector<Change>> &changes);

}  // namespace signin::version
