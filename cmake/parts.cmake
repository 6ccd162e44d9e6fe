# The engine's three parts as one library each, for every build that compiles them: the repository
# build and the module build (CMakeLists.txt) and the fuzz targets (fuzz/CMakeLists.txt).
#
#   signin_core     src/core     the engine: sign-in, sessions, tokens, second factors, pages
#   signin_store    src/store    the store's backends (LMDB, PostgreSQL) behind include/signin/store.hpp
#   signin_version  src/version  API versions: date patterns, routing tables, OpenAPI documents
#
# Each part compiles with include/ (what parts and glue share) and its own folder, nothing else:
# a private header of one part (src/core/encoding.hpp, src/store/records.hpp, ...) is not on the
# include path of another, so reaching into it fails to compile instead of passing review.
#
# The includer sets, before include():
#   SIGNIN_PART_TYPE     STATIC (linked by the tools and tests) or OBJECT (packed into one archive)
#   SIGNIN_PART_OPTIONS  compile options of every part's sources (warnings, sanitizers, nginx's ABI flags)
# and gets the three targets.

set(SIGNIN_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
cmake_path(NORMAL_PATH SIGNIN_ROOT)

find_package(PkgConfig REQUIRED)
foreach(_pkg IN ITEMS sodium:libsodium cjson:libcjson lmdb:lmdb icu:icu-uc icui18n:icu-i18n oath:liboath cbor:libcbor
                      crypto:libcrypto qrencode:libqrencode pq:libpq curl:libcurl)
  string(REPLACE ":" ";" _pkg ${_pkg})
  list(GET _pkg 0 _name)
  list(GET _pkg 1 _module)
  string(TOUPPER ${_name} _name)
  if(NOT TARGET PkgConfig::${_name})
    pkg_check_modules(${_name} REQUIRED IMPORTED_TARGET ${_module})
  endif()
endforeach()

# signin_part(NAME DIR SOURCES... [PACKAGES pkg...] [USES part...]): the library NAME of every
# .cpp of src/DIR (and SOURCES), compiled against the pkg-config packages it includes and the
# public headers of the parts it calls.
function(signin_part name dir)
  cmake_parse_arguments(PART "" "" "SOURCES;PACKAGES;USES" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${SIGNIN_ROOT}/src/${dir}/*.cpp)
  add_library(${name} ${SIGNIN_PART_TYPE} ${_srcs} ${PART_SOURCES})
  target_include_directories(${name} PUBLIC ${SIGNIN_ROOT}/include PRIVATE ${SIGNIN_ROOT}/src/${dir})
  target_compile_options(${name} PRIVATE ${SIGNIN_PART_OPTIONS})
  foreach(_pkg IN LISTS PART_PACKAGES)
    target_link_libraries(${name} PRIVATE PkgConfig::${_pkg})
  endforeach()
  target_link_libraries(${name} PRIVATE ${PART_USES})
endfunction()

# The files of src/pages become one generated source of the core (src/core/pages.cpp serves them).
file(GLOB _page_files CONFIGURE_DEPENDS ${SIGNIN_ROOT}/src/pages/*)
set(_pages_cpp ${CMAKE_BINARY_DIR}/generated/pages_data.cpp)
add_custom_command(OUTPUT ${_pages_cpp}
  COMMAND ${CMAKE_COMMAND} -DDIR=${SIGNIN_ROOT}/src/pages -DOUT=${_pages_cpp}
          -P ${SIGNIN_ROOT}/src/core/data/embed_pages.cmake
  DEPENDS ${_page_files} ${SIGNIN_ROOT}/src/core/data/embed_pages.cmake
  COMMENT "embedding src/pages"
  VERBATIM)
# one raw string literal per page file: longer than the standard's minimum string length
set_source_files_properties(${_pages_cpp} PROPERTIES COMPILE_OPTIONS -Wno-overlength-strings)

# The catalogs of src/i18n (LANG.po) become another (src/core/i18n.cpp reads them at start).
file(GLOB _po_files CONFIGURE_DEPENDS ${SIGNIN_ROOT}/src/i18n/*.po)
set(_i18n_cpp ${CMAKE_BINARY_DIR}/generated/i18n_data.cpp)
add_custom_command(OUTPUT ${_i18n_cpp}
  COMMAND ${CMAKE_COMMAND} -DDIR=${SIGNIN_ROOT}/src/i18n -DOUT=${_i18n_cpp} -DNAME=i18n_data -DGLOB=*.po
          -P ${SIGNIN_ROOT}/src/core/data/embed_pages.cmake
  DEPENDS ${_po_files} ${SIGNIN_ROOT}/src/core/data/embed_pages.cmake
  COMMENT "embedding src/i18n"
  VERBATIM)
set_source_files_properties(${_i18n_cpp} PROPERTIES COMPILE_OPTIONS -Wno-overlength-strings)

# signin_smtp sends through libcurl (SMTP, STARTTLS, SASL; Debian's libcurl4-openssl-dev)
# ICU: icu-uc for text, icu-i18n for the messages' plural rules and number formats (i18n.cpp)
signin_part(signin_core core SOURCES ${_pages_cpp} ${_i18n_cpp}
  PACKAGES SODIUM CJSON ICU ICUI18N OATH CBOR CRYPTO QRENCODE CURL)
# the store's records carry audit entries in the engine's JSON (signin/json.hpp)
signin_part(signin_store store PACKAGES SODIUM CJSON LMDB PQ USES signin_core)
# the upstream's OpenAPI document (api_versions_schema) is read with cJSON
signin_part(signin_version version PACKAGES CJSON)
