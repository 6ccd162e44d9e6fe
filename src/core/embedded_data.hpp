// The files compiled into the module: the pages of src/pages and the PO catalogs of src/i18n,
// embedded at build time (src/core/data/embed_pages.cmake writes the definitions into the build
// directory). Read through signin/pages.hpp and signin/i18n.hpp only.
#pragma once

#include <cstddef>
#include <string_view>

namespace signin {

struct EmbeddedFile {
    std::string_view name;  // file name in its folder, e.g. "signin.js" or "de.po"
    std::string_view hash;  // the first 12 hex digits of its SHA-256
    std::string_view body;
};

namespace pages_data {  // src/pages
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace pages_data

namespace i18n_data {  // src/i18n, the *.po files
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace i18n_data

}  // namespace signin
