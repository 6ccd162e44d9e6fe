// Version changes: how one version's JSON bodies differ from the version before it, and the
// migration of a body between two versions of a chain, one version at a time.
//   field_added PATH [default=JSON]    field_removed PATH [value=JSON]
//   field_renamed OLD NEW              value_mapped PATH OLD NEW
// each optionally followed by `on METHOD ROUTE`. PATH is a JSON Pointer (RFC 6901) where a `*`
// token stands for every element of an array.
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace signin::version {

class Group;

enum class ChangeKind { FieldAdded, FieldRemoved, FieldRenamed, ValueMapped };

struct Change {
    ChangeKind kind = ChangeKind::FieldAdded;
    std::string path;      // the pointer as written; field_renamed: OLD
    std::string new_path;  // field_renamed: NEW
    std::string value;     // JSON text: default= / value= (empty: none); value_mapped: OLD
    std::string mapped;    // value_mapped: NEW, JSON text
    std::string method;    // `on METHOD ROUTE`: empty = every route
    std::string route;     // the route as written
    std::string shape;     // the route's shape ("/users/{}"), how requests are matched to it
};

// Parses one change directive: words[0] is its name, the rest its arguments as nginx split them.
// Returns an empty string, or what is wrong (for `nginx -t`). A JSON argument is one word;
// value_mapped takes a word that is not valid JSON as a string.
std::string parse_change(const std::vector<std::string> &words, Change &out);

// Empty, or why `pointer` is not a change's path: it must start with "/", use "~0"/"~1" only as
// escapes, and (`field` true) end in a field name rather than `*`.
std::string check_pointer(std::string_view pointer, bool field);

// The checks of a whole chain, `changes[v]` the changes of version v of `group` (oldest first).
// Each returns an empty string or the message for `nginx -t`.
// A change scoped to a method and route that no version of the group declares:
std::string check_routes(const std::vector<std::vector<Change>> &changes, const Group &group);
// A rename onto a field that exists at that version (added or renamed to earlier, and not removed
// or renamed away since), or changes in one version that cannot be undone going back: a value
// mapped twice from or onto the same value, a field both added and removed, two renames from or
// onto one field, a change in the oldest version (there is nothing older to migrate from).
std::string check_chain(const std::vector<std::vector<Change>> &changes);

// Migrates JSON bodies between versions. Numbers and strings keep their exact spelling; in a body
// that changes, what no change touched keeps its text, whitespace included, and the objects and
// arrays a change touched are written without whitespace between the parts it touched.
class Migrator {
public:
    // `changes[v]` as for check_chain; throws std::invalid_argument on a change parse_change
    // would refuse.
    explicit Migrator(std::vector<std::vector<Change>> changes);
    ~Migrator();
    Migrator(const Migrator &) = delete;
    Migrator &operator=(const Migrator &) = delete;

    // Whether any change lies between versions `from` and `to` for this request (method and the
    // matched route's shape; an empty shape matches only changes of every route).
    bool applies(std::size_t from, std::size_t to, std::string_view method,
                 std::string_view shape) const noexcept;

    enum class Result { Unchanged, Rewritten, Invalid };
    // Migrates `body` from version `from` to `to`: forward through each newer version's changes
    // in their order, or back through each one's in reverse. Rewritten: `out` holds the new body.
    // Unchanged: no change touched it (pass the original). Invalid: not JSON (pass it untouched).
    Result migrate(std::string_view body, std::size_t from, std::size_t to, std::string_view method,
                   std::string_view shape, std::string &out) const;
    // The same, Rewritten leaving `out` a view of this thread's own buffer, valid until its next
    // migrate: for a caller that copies the new body anyway (the nginx glue, into the request's
    // memory), one copy fewer.
    Result migrate(std::string_view body, std::size_t from, std::size_t to, std::string_view method,
                   std::string_view shape, std::string_view &out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace signin::version
