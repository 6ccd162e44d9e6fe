// libFuzzer: the API versions router. A fixed group (path strategy with fallback, and a header
// strategy) resolves fuzzed requests: method, path and requested version, split at NULs. Route
// patterns from nginx.conf go through parse_pattern, fuzzed with the same input.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "signin/version/group.hpp"

namespace {

std::unique_ptr<signin::version::Group> make_group(signin::version::Strategy s) {
    auto g = std::make_unique<signin::version::Group>();
    g->set_strategy(s, s == signin::version::Strategy::Header ? "x-api-version" : "");
    auto v1 = g->add_version("v1", std::nullopt, std::nullopt);
    g->add_route(v1, "@v1", "GET", "/users");
    g->add_route(v1, "@v1", "GET", "/users/:id");
    g->add_route(v1, "@v1", "POST", "/users");
    g->add_route(v1, "@v1", "GET", "/a/{x}/c");
    auto v2 = g->add_version("v2", std::nullopt, std::nullopt);
    g->add_route(v2, "@v2", "GET", "/users/{id}");
    g->add_route(v2, "@v2", "GET", "/{y}/b/c");
    g->add_route(v2, "@v2", "DELETE", "/users/:id/sessions/:sid");
    g->set_default("v1");
    g->finish();
    return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    static const auto by_path = make_group(signin::version::Strategy::Path);
    static const auto by_header = make_group(signin::version::Strategy::Header);
    std::string_view in(reinterpret_cast<const char *>(data), size);
    std::size_t a = in.find('\0');
    std::string_view method = in.substr(0, a);
    std::string_view rest = a == std::string_view::npos ? std::string_view() : in.substr(a + 1);
    std::size_t b = rest.find('\0');
    std::string_view path = rest.substr(0, b);
    std::string_view requested = b == std::string_view::npos ? std::string_view() : rest.substr(b + 1);
    auto d = by_path->decide_path(method, path);
    if (d.kind == signin::version::Decision::Kind::Route && d.endpoint == nullptr) __builtin_trap();
    if (d.strip_len > path.size()) __builtin_trap();
    auto h = by_header->decide(method, path, requested);
    if (h.kind == signin::version::Decision::Kind::Route && h.endpoint == nullptr) __builtin_trap();
    try {
        (void)signin::version::parse_pattern(path);
    } catch (const signin::version::ConfigError &) {
        // a refused pattern is an nginx -t message
    }
    return 0;
}
