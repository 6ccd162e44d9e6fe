#include "signin/version/openapi.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "signin/version/dates.hpp"

namespace signin::version {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_len(std::string_view s, std::size_t i) noexcept {
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = b(i);
    std::size_t n;
    unsigned min;
    unsigned cp;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) { n = 2; min = 0x80; cp = c & 0x1fu; }
    else if ((c & 0xf0) == 0xe0) { n = 3; min = 0x800; cp = c & 0x0fu; }
    else if ((c & 0xf8) == 0xf0) { n = 4; min = 0x10000; cp = c & 0x07u; }
    else return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

int method_rank(std::string_view m) {
    static constexpr std::string_view order[] = {"GET",   "HEAD",   "POST",    "PUT",
                                                  "PATCH", "DELETE", "OPTIONS", "TRACE"};
    for (int i = 0; i < 8; ++i) {
        if (order[i] == m) {
            return i;
        }
    }
    return 8;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

}  // namespace

std::string json_quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else if (std::size_t n = utf8_len(s, i)) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\\ufffd";
            ++i;
        }
    }
    out += '"';
    return out;
}

namespace {

// "get_users_id_lines_line" for GET /users/{id}/lines/{line}: unique in a document (one
// operation per method and path shape), letters, digits and '_' only.
std::string operation_id(std::string_view method, std::string_view templated) {
    std::string id = lower(method);
    bool sep = true;
    for (char c : templated) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (word) {
            if (sep) id += '_';
            id += c;
        }
        sep = !word;
    }
    return id;
}

// The document's opening up to its paths: info (the version, its deprecation and sunset), the
// servers it is reached at, no security of its own, and the router's error schema.
void append_head(std::string &j, const Group &group, std::size_t v, std::string_view title,
                 const OpenApiOptions &options) {
    const VersionDecl &version = group.versions().at(v);
    const std::string root = options.mount.empty() ? "/" : options.mount;
    j += "{\"openapi\":\"3.1.0\",\"info\":{\"title\":";
    j += json_quote(title);
    j += ",\"version\":";
    j += json_quote(version.name);
    if (version.deprecated) {
        j += ",\"x-deprecation\":" + json_quote(http_date(*version.deprecated));
    }
    if (version.sunset) {
        j += ",\"x-sunset\":" + json_quote(http_date(*version.sunset));
    }
    j += "},\"servers\":[";
    if (group.strategy() == Strategy::Path) {
        j += "{\"url\":" + json_quote(options.mount + "/" + version.name) + ",\"description\":" +
             json_quote("version " + version.name) + "}";
        if (group.default_version() == v) {
            j += ",{\"url\":" + json_quote(root) + ",\"description\":" +
                 json_quote("the default version (" + version.name + ")") + "}";
        }
    } else {
        j += "{\"url\":" + json_quote(root) + "}";
    }
    // the router decides nothing about who may call: the location's own access checks do
    j += "],\"security\":[],\"components\":{\"schemas\":{\"RouterError\":{\"type\":\"object\","
         "\"description\":\"an answer of the version router itself (unknown or missing version, no route, "
         "method not allowed)\",\"properties\":{\"error\":{\"type\":\"string\"},\"code\":{\"type\":\"string\"}},"
         "\"required\":[\"error\",\"code\"]}}},\"paths\":{";
}

// What every operation of version v says of how the version is chosen: the header of the header
// strategy as a parameter (optional for the default version, else required), the media type of
// the Accept strategy.
struct VersionChoice {
    std::string header_param, media;
};

VersionChoice version_choice(const Group &group, std::size_t v) {
    const VersionDecl &version = group.versions().at(v);
    VersionChoice c;
    if (group.strategy() == Strategy::Header) {
        c.header_param = "{\"name\":" + json_quote(group.strategy_argument()) + ",\"in\":\"header\",\"required\":" +
                         (group.default_version() == v ? "false" : "true") +
                         ",\"description\":\"the API version\",\"schema\":{\"type\":\"string\",\"enum\":[" +
                         json_quote(version.name) + "]}}";
    }
    if (group.strategy() == Strategy::Accept) {
        c.media = "application/vnd." + group.strategy_argument() + "." + version.name + "+json";
    }
    return c;
}

// One operation object, of endpoint e of version v, in the path item that `key` templates (its
// parameter names are the path's).
void append_operation(std::string &j, const Group &group, std::size_t v, const Endpoint &e, const Pattern &key,
                      const VersionChoice &choice, const OpenApiOptions &options) {
    const RouteDecl &r = *e.route;
    j += json_quote(lower(r.method));
    j += ":{\"summary\":";
    j += json_quote(r.method + " " + key.templated());
    j += ",\"operationId\":" + json_quote(operation_id(r.method, key.templated()));
    j += ",\"parameters\":[";
    bool first = true;
    for (const Segment &seg : key.segments) {
        if (!seg.param) continue;
        if (!first) j += ',';
        first = false;
        j += "{\"name\":" + json_quote(seg.text) +
             ",\"in\":\"path\",\"required\":true,\"schema\":{\"type\":\"string\"}}";
    }
    if (!choice.header_param.empty()) j += (first ? "" : ",") + choice.header_param;
    j += "],\"responses\":{\"default\":{\"description\":\"the controller's answer\"";
    if (!choice.media.empty()) j += ",\"content\":{" + json_quote(choice.media) + ":{}}";
    j += "},\"4XX\":{\"description\":\"the router's refusal\",\"content\":{\"application/json\":"
         "{\"schema\":{\"$ref\":\"#/components/schemas/RouterError\"}}}}}";
    if (group.versions().at(v).deprecated) {
        j += ",\"deprecated\":true";
    }
    j += ",\"x-answered-by-version\":";
    j += json_quote(group.versions()[e.answered_by].name);
    if (options.controllers) {
        j += ",\"x-controller\":";
        j += json_quote(r.controller);
    }
    j += '}';
}

}  // namespace

std::string openapi_document(const Group &group, std::size_t v, std::string_view title,
                             const OpenApiOptions &options) {
    std::string j;
    append_head(j, group, v, title, options);
    const VersionChoice choice = version_choice(group, v);
    // by path, then method, so that one shape is one path item
    struct Row {
        std::string shape;
        int rank;
        const Endpoint *e;
    };
    std::vector<Row> rows;
    for (const Endpoint &e : group.endpoints(v)) {
        rows.push_back(Row{e.route->pattern.shape(), method_rank(e.route->method), &e});
    }
    std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
        return a.shape != b.shape ? a.shape < b.shape : a.rank < b.rank;
    });
    std::string shape;
    const Pattern *key = nullptr;  // the path item's template (its parameter names are used)
    for (const Row &row : rows) {
        if (!key || row.shape != shape) {
            if (key) {
                j += "},";
            }
            shape = row.shape;
            key = &row.e->route->pattern;
            j += json_quote(key->templated());
            j += ":{";
        } else {
            j += ',';
        }
        append_operation(j, group, v, *row.e, *key, choice, options);
    }
    if (key) {
        j += '}';
    }
    j += "}}";
    return j;
}

}  // namespace signin::version
