// The files of src/i18n (the PO catalogs), embedded at build time (src/core/data/embed_pages.cmake writes the
// definitions into the build directory). Read through signin/i18n.hpp only.
#pragma once

#include <cstddef>
#include <string_view>

namespace signin::i18n_data {

struct EmbeddedFile {
    std::string_view name;  // file name in src/i18n, e.g. "de.po"
    std::string_view hash;  // the first 12 hex digits of its SHA-256
    std::string_view body;
};

extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;

}  // namespace signin::i18n_data
