// The files of src/pages, embedded at build time (src/core/data/embed_pages.cmake writes the
// definitions into the build directory). Read through signin/pages.hpp only.
#pragma once

#include <cstddef>
#include <string_view>

namespace signin::pages_data {

struct EmbeddedFile {
    std::string_view name;  // file name in src/pages, e.g. "signin.js"
    std::string_view hash;  // the first 12 hex digits of its SHA-256
    std::string_view body;
};

extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;

}  // namespace signin::pages_data
