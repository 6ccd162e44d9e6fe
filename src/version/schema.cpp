// The upstream's OpenAPI document carried to each version's field names, and the changelog of the
// version changes. The document is configuration, read once: cJSON's tree is enough here (a
// number in a schema keeps its value, not always its spelling).
#include "signin/version/schema.hpp"

#include <cjson/cJSON.h>

#include <functional>
#include <new>
#include <stdexcept>

#include "signin/version/dates.hpp"
#include "signin/version/openapi.hpp"
#include "signin/version/pattern.hpp"

namespace signin::version {

namespace {

struct JsonDeleter {
    void operator()(cJSON *j) const noexcept { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonDeleter>;

Json parse(std::string_view text) { return Json(cJSON_ParseWithLength(text.data(), text.size())); }

std::string print(const cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    if (!s) throw std::bad_alloc();
    std::string out(s);
    cJSON_free(s);
    return out;
}

cJSON *member(const cJSON *obj, const char *key) {
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : nullptr;
}

// Sets obj[key] to `value` (taking it), replacing what was there.
void put(cJSON *obj, const std::string &key, cJSON *value) {
    if (!value) throw std::bad_alloc();
    if (cJSON_GetObjectItemCaseSensitive(obj, key.c_str())) {
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key.c_str(), value);
    } else {
        cJSON_AddItemToObject(obj, key.c_str(), value);
    }
}

cJSON *object_at(cJSON *obj, const char *key) {
    cJSON *m = member(obj, key);
    if (cJSON_IsObject(m)) return m;
    cJSON *fresh = cJSON_CreateObject();
    put(obj, key, fresh);
    return fresh;
}

// A change's pointer as tokens: "*" is every array element (empty string marks it), "~1" "~0".
std::vector<std::pair<bool, std::string>> tokens_of(std::string_view pointer) {
    std::vector<std::pair<bool, std::string>> out;
    std::size_t pos = 1;
    while (pos <= pointer.size()) {
        std::size_t end = pointer.find('/', pos);
        if (end == std::string_view::npos) end = pointer.size();
        std::string_view raw = pointer.substr(pos, end - pos);
        std::string name;
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '~' && i + 1 < raw.size()) {
                name += raw[++i] == '1' ? '/' : '~';
            } else {
                name += raw[i];
            }
        }
        out.emplace_back(raw == "*", name);
        pos = end + 1;
    }
    return out;
}

// Replaces a {"$ref": "#/components/SECTION/NAME"} node by a copy of what it names (so that a
// change made to it stays in this operation), a few levels deep for a reference to a reference.
void inline_ref(cJSON *node, const cJSON *root) {
    for (int depth = 0; depth < 8; ++depth) {
        const cJSON *ref = member(node, "$ref");
        if (!cJSON_IsString(ref)) return;
        std::string_view r = ref->valuestring;
        constexpr std::string_view prefix = "#/components/";
        std::size_t slash = r.find('/', prefix.size());
        if (r.substr(0, prefix.size()) != prefix || slash == std::string_view::npos) return;
        std::string section(r.substr(prefix.size(), slash - prefix.size()));
        std::string name(r.substr(slash + 1));
        const cJSON *target = member(member(member(root, "components"), section.c_str()), name.c_str());
        if (!cJSON_IsObject(target)) return;
        cJSON_DeleteItemFromObjectCaseSensitive(node, "$ref");
        for (const cJSON *m = target->child; m; m = m->next) {
            if (!cJSON_GetObjectItemCaseSensitive(node, m->string)) {
                cJSON_AddItemToObject(node, m->string, cJSON_Duplicate(m, true));
            }
        }
    }
}

// Calls f(object schema) for each schema that holds the pointer's last field, following
// "properties" for a name and "items" for "*" (and a referenced component, copied in place).
// `branch`: the schema is one of an allOf/anyOf/oneOf (a field a change brings in is added once,
// to the schema that holds them, not to each).
void reach_parents(cJSON *schema, const std::vector<std::pair<bool, std::string>> &tokens, std::size_t i,
                   const cJSON *root, const std::function<void(cJSON *, bool)> &f, bool branch = false) {
    if (!cJSON_IsObject(schema)) return;
    inline_ref(schema, root);
    for (const char *combiner : {"allOf", "anyOf", "oneOf"}) {
        cJSON *list = member(schema, combiner);
        for (cJSON *s = cJSON_IsArray(list) ? list->child : nullptr; s; s = s->next) {
            reach_parents(s, tokens, i, root, f, true);
        }
    }
    if (i + 1 >= tokens.size()) {
        f(schema, branch);
        return;
    }
    cJSON *next = tokens[i].first ? member(schema, "items")
                                  : member(member(schema, "properties"), tokens[i].second.c_str());
    reach_parents(next, tokens, i + 1, root, f, false);
}

// The last field's schema inside an object schema, or nullptr.
cJSON *property(cJSON *obj, const std::string &name) { return member(member(obj, "properties"), name.c_str()); }

void drop_required(cJSON *obj, const std::string &name) {
    cJSON *req = member(obj, "required");
    int i = 0;
    for (cJSON *r = cJSON_IsArray(req) ? req->child : nullptr; r; r = r->next, ++i) {
        if (cJSON_IsString(r) && name == r->valuestring) {
            cJSON_DeleteItemFromArray(req, i);
            return;
        }
    }
}

void rename_property(cJSON *obj, const std::string &from, const std::string &to) {
    cJSON *props = member(obj, "properties");
    cJSON *p = cJSON_IsObject(props) ? cJSON_DetachItemFromObjectCaseSensitive(props, from.c_str()) : nullptr;
    if (!p) return;
    put(props, to, p);
    cJSON *req = member(obj, "required");
    for (cJSON *r = cJSON_IsArray(req) ? req->child : nullptr; r; r = r->next) {
        if (cJSON_IsString(r) && from == r->valuestring) {
            cJSON_SetValuestring(r, to.c_str());
        }
    }
}

// A field that this direction of a change brings in: `value` (JSON text) is its default.
void add_property(cJSON *obj, const std::string &name, const std::string &value) {
    cJSON *schema = cJSON_CreateObject();
    if (!schema) throw std::bad_alloc();
    if (!value.empty()) {
        cJSON_AddItemToObject(schema, "default", parse(value).release());
    }
    put(object_at(obj, "properties"), name, schema);
}

// value_mapped on a field's schema: `from` becomes `to` in its enum and const.
void map_value(cJSON *schema, const std::string &from, const std::string &to) {
    if (!cJSON_IsObject(schema)) return;
    Json a = parse(from);
    cJSON *en = member(schema, "enum");
    for (cJSON *e = cJSON_IsArray(en) ? en->child : nullptr; e; e = e->next) {
        if (cJSON_Compare(e, a.get(), true)) {
            cJSON_ReplaceItemViaPointer(en, e, parse(to).release());
            break;
        }
    }
    cJSON *c = member(schema, "const");
    if (c && cJSON_Compare(c, a.get(), true)) {
        put(schema, "const", parse(to).release());
    }
}

// One change applied to a body schema, forward (the older version's shape to this one's) or back.
void apply(cJSON *schema, const Change &c, bool forward, const cJSON *root) {
    auto tokens = tokens_of(c.path);
    const std::string &last = tokens.back().second;
    reach_parents(schema, tokens, 0, root, [&](cJSON *obj, bool branch) {
        switch (c.kind) {
        case ChangeKind::FieldAdded:
        case ChangeKind::FieldRemoved:
            if ((c.kind == ChangeKind::FieldAdded) == forward) {
                if (!branch) add_property(obj, last, c.value);
            } else if (cJSON *props = member(obj, "properties")) {
                cJSON_DeleteItemFromObjectCaseSensitive(props, last.c_str());
                drop_required(obj, last);
            }
            break;
        case ChangeKind::FieldRenamed: {
            std::string to = tokens_of(c.new_path).back().second;
            forward ? rename_property(obj, last, to) : rename_property(obj, to, last);
            break;
        }
        case ChangeKind::ValueMapped:
            if (tokens.back().first) {
                map_value(member(obj, "items"), forward ? c.value : c.mapped, forward ? c.mapped : c.value);
            } else {
                map_value(property(obj, last), forward ? c.value : c.mapped, forward ? c.mapped : c.value);
            }
            break;
        }
    });
}

}  // namespace

struct UpstreamSchema::Impl {
    Json doc;
};

UpstreamSchema::UpstreamSchema(std::string_view json_text) : impl_(std::make_unique<Impl>()) {
    impl_->doc = parse(json_text);
    const cJSON *doc = impl_->doc.get();
    if (!doc) throw ConfigError("the upstream's OpenAPI document is not JSON");
    if (!cJSON_IsObject(member(doc, "paths"))) throw ConfigError("the upstream's OpenAPI document has no \"paths\" object");
    if (member(member(member(doc, "components"), "schemas"), "RouterError"))
        throw ConfigError("the upstream's OpenAPI document names a schema \"RouterError\", the version router's own");
}

UpstreamSchema::~UpstreamSchema() = default;

namespace {

std::string shape_of(std::string_view path) {
    try {
        return parse_pattern(path).shape();
    } catch (const ConfigError &) {
        return {};
    }
}

// The upstream's operation for `method` (lower case) on a path of shape `shape`, or nullptr.
const cJSON *find_operation(const cJSON *doc, const std::string &method, const std::string &shape,
                            std::string_view mount) {
    for (const cJSON *item = member(doc, "paths")->child; item; item = item->next) {
        std::string_view path = item->string;
        std::string own = shape_of(path);
        std::string under = !mount.empty() && path.substr(0, mount.size()) == mount ? shape_of(path.substr(mount.size()))
                                                                                     : std::string();
        if ((own == shape || under == shape) && cJSON_IsObject(member(item, method.c_str()))) {
            return member(item, method.c_str());
        }
    }
    return nullptr;
}

// Every body schema of an operation: its request body's and each answer's, per media type.
void each_body_schema(cJSON *op, const cJSON *root, const std::function<void(cJSON *)> &f) {
    auto contents = [&](cJSON *holder) {
        inline_ref(holder, root);
        cJSON *content = member(holder, "content");
        for (cJSON *media = cJSON_IsObject(content) ? content->child : nullptr; media; media = media->next) {
            if (cJSON *schema = member(media, "schema")) f(schema);
        }
    };
    if (cJSON *body = member(op, "requestBody")) contents(body);
    cJSON *responses = member(op, "responses");
    for (cJSON *r = cJSON_IsObject(responses) ? responses->child : nullptr; r; r = r->next) contents(r);
}

// Copies what the upstream says of one operation into the router's operation (the router's path
// parameters stay: their names are the path's).
void merge_operation(cJSON *into, const cJSON *from) {
    for (const char *key : {"summary", "description", "requestBody"}) {
        if (const cJSON *m = member(from, key)) put(into, key, cJSON_Duplicate(m, true));
    }
    cJSON *responses = object_at(into, "responses");
    const cJSON *theirs = member(from, "responses");
    for (const cJSON *r = cJSON_IsObject(theirs) ? theirs->child : nullptr; r; r = r->next) {
        put(responses, r->string, cJSON_Duplicate(r, true));
    }
    const cJSON *params = member(from, "parameters");
    cJSON *ours = member(into, "parameters");
    for (const cJSON *p = cJSON_IsArray(params) ? params->child : nullptr; p && cJSON_IsArray(ours); p = p->next) {
        const cJSON *in = member(p, "in");
        if (!(cJSON_IsString(in) && std::string_view(in->valuestring) == "path")) {
            cJSON_AddItemToArray(ours, cJSON_Duplicate(p, true));
        }
    }
}

// Carries an operation's body schemas from version `from` to `to` through the changes in scope.
void carry(cJSON *op, const std::vector<std::vector<Change>> &changes, std::size_t from, std::size_t to,
           const std::string &method, const std::string &shape, const cJSON *root) {
    auto in_scope = [&](const Change &c) { return c.method.empty() || (c.method == method && c.shape == shape); };
    each_body_schema(op, root, [&](cJSON *schema) {
        if (to < from) {
            for (std::size_t k = from; k > to; --k) {
                for (auto c = changes[k].rbegin(); c != changes[k].rend(); ++c) {
                    if (in_scope(*c)) apply(schema, *c, false, root);
                }
            }
        } else {
            for (std::size_t k = from + 1; k <= to; ++k) {
                for (const Change &c : changes[k]) {
                    if (in_scope(c)) apply(schema, c, true, root);
                }
            }
        }
    });
}

std::string upper(std::string s) {
    for (char &c : s) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return s;
}

}  // namespace

std::string UpstreamSchema::document(std::string_view router_doc, const Group &, std::size_t v, std::size_t upstream,
                                     const std::vector<std::vector<Change>> &changes, std::string_view mount) const {
    Json out = parse(router_doc);
    const cJSON *doc = impl_->doc.get();
    if (!out) throw std::invalid_argument("the router's document is not JSON");
    for (cJSON *item = member(out.get(), "paths")->child; item; item = item->next) {
        const std::string shape = shape_of(item->string);
        for (cJSON *op = item->child; op; op = op->next) {
            const cJSON *theirs = find_operation(doc, op->string, shape, mount);
            if (!theirs) continue;
            merge_operation(op, theirs);
            carry(op, changes, upstream, v, upper(op->string), shape, doc);
        }
    }
    // the upstream's components beside the router's, for the references left in place
    cJSON *components = object_at(out.get(), "components");
    const cJSON *theirs = member(doc, "components");
    for (const cJSON *section = cJSON_IsObject(theirs) ? theirs->child : nullptr; section; section = section->next) {
        cJSON *ours = object_at(components, section->string);
        for (const cJSON *c = cJSON_IsObject(section) ? section->child : nullptr; c; c = c->next) {
            if (!member(ours, c->string)) cJSON_AddItemToObject(ours, c->string, cJSON_Duplicate(c, true));
        }
    }
    return print(out.get());
}

namespace {

const char *kind_name(ChangeKind k) {
    switch (k) {
    case ChangeKind::FieldAdded: return "field_added";
    case ChangeKind::FieldRemoved: return "field_removed";
    case ChangeKind::FieldRenamed: return "field_renamed";
    case ChangeKind::ValueMapped: return "value_mapped";
    }
    return "";
}

std::string change_json(const Change &c) {
    std::string j = "{\"change\":" + json_quote(kind_name(c.kind)) + ",\"path\":" + json_quote(c.path);
    if (c.kind == ChangeKind::FieldRenamed) j += ",\"new_path\":" + json_quote(c.new_path);
    if (c.kind == ChangeKind::FieldAdded && !c.value.empty()) j += ",\"default\":" + print(parse(c.value).get());
    if (c.kind == ChangeKind::FieldRemoved && !c.value.empty()) j += ",\"value\":" + print(parse(c.value).get());
    if (c.kind == ChangeKind::ValueMapped) {
        j += ",\"old\":" + print(parse(c.value).get()) + ",\"new\":" + print(parse(c.mapped).get());
    }
    if (!c.method.empty()) {
        j += ",\"on\":{\"method\":" + json_quote(c.method) + ",\"route\":" + json_quote(c.route) + "}";
    }
    return j + "}";
}

// A Markdown code span that holds any text.
std::string code(std::string_view s) {
    return s.find('`') == std::string_view::npos ? "`" + std::string(s) + "`" : "`` " + std::string(s) + " ``";
}

std::string change_markdown(const Change &c) {
    std::string line = "- ";
    switch (c.kind) {
    case ChangeKind::FieldAdded:
        line += code(c.path) + " added" + (c.value.empty() ? "" : "; requests of older versions get " + code(c.value));
        break;
    case ChangeKind::FieldRemoved:
        line += code(c.path) + " removed" +
                (c.value.empty() ? "" : "; answers to older versions still get " + code(c.value));
        break;
    case ChangeKind::FieldRenamed: line += code(c.path) + " renamed to " + code(c.new_path); break;
    case ChangeKind::ValueMapped: line += code(c.path) + ": " + code(c.value) + " is now " + code(c.mapped); break;
    }
    if (!c.method.empty()) line += " (on " + code(c.method + " " + c.route) + ")";
    return line + "\n";
}

}  // namespace

std::string changes_json(const Group &group, const std::vector<std::vector<Change>> &changes) {
    std::string j = "{\"versions\":[";
    const auto &versions = group.versions();
    for (std::size_t v = 0; v < versions.size(); ++v) {
        if (v) j += ',';
        j += "{\"version\":" + json_quote(versions[v].name);
        if (v) j += ",\"previous\":" + json_quote(versions[v - 1].name);
        j += ",\"changes\":[";
        for (std::size_t i = 0; v < changes.size() && i < changes[v].size(); ++i) {
            j += (i ? "," : "") + change_json(changes[v][i]);
        }
        j += "]}";
    }
    return j + "]}";
}

std::string changes_markdown(const Group &group, const std::vector<std::vector<Change>> &changes) {
    std::string md = "# API changes\n";
    const auto &versions = group.versions();
    for (std::size_t v = versions.size(); v-- > 0;) {
        const VersionDecl &d = versions[v];
        md += "\n## " + d.name + "\n\n";
        if (d.deprecated) md += "Deprecated since " + iso_date(*d.deprecated) + ".\n";
        if (d.sunset) md += std::string(d.gone ? "Retired on " : "Sunset on ") + iso_date(*d.sunset) + ".\n";
        if (d.deprecated || d.sunset) md += "\n";
        if (v == 0) {
            md += "The first version.\n";
            continue;
        }
        if (v >= changes.size() || changes[v].empty()) {
            md += "No change to the bodies since " + versions[v - 1].name + ".\n";
            continue;
        }
        md += "Changes since " + versions[v - 1].name + ":\n\n";
        for (const Change &c : changes[v]) md += change_markdown(c);
    }
    return md;
}

}  // namespace signin::version
