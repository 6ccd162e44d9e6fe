// Pages and emails in the visitor's language (signin_languages, signin_messages): the catalogs
// (gettext PO files whose msgid is the English text), the choice of a language for a request
// (the svc_lang cookie, else RFC 4647 lookup of Accept-Language, else the first configured), and
// messages formatted by ICU (plural forms, numbers). Everything is parsed and checked at
// configuration time; a request only picks a language by index. Valid C++17: the glue includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "signin/types.hpp"

namespace signin::i18n {

// One entry of a PO file. A fuzzy entry (a translator's guess awaiting review) is parsed but not
// used, as msgfmt leaves it out of the compiled catalog.
struct PoEntry {
    std::string context;  // msgctxt, "" when none
    std::string id;       // msgid: the English text
    std::string text;     // msgstr (for a plural entry, msgstr[0])
    bool fuzzy = false;
    std::size_t line = 0;  // where the entry starts, for messages
};

// Parses a PO file: comments, msgctxt, msgid, msgid_plural, msgstr and msgstr[N], each a quoted
// string continued by further quoted lines, with C escapes (\n \t \" \\ and the rest of C's
// single-character ones). The header (msgid "") is returned like any entry. An error names the
// line. At most 4 MiB of text and 20000 entries.
Result<std::vector<PoEntry>> parse_po(std::string_view text);

// The arguments of a message: {name} is replaced by a string, and a number drives
// {name, plural, ...} (and is written in the language's digits where it stands for #).
struct Arg {
    std::string name;
    std::string text;       // used when is_number is false
    double number = 0;
    bool is_number = false;
};
Arg text_arg(std::string name, std::string value);
Arg number_arg(std::string name, double value);

// The configured languages with their catalogs. Index 0 is the default (the first of
// signin_languages).
class Languages {
public:
    // The catalogs shipped with the module, by tag ("de", "pt-BR"), as PO text.
    static const std::vector<std::pair<std::string_view, std::string_view>> &shipped();
    // Whether a tag has a shipped catalog (English has none: its msgids are the text).
    static bool is_shipped(std::string_view tag);

    // `tags`: signin_languages, in order (each a BCP 47 tag as written, compared ignoring case;
    // no duplicates). `overrides`: signin_messages, tag -> PO text, laid over the shipped catalog
    // of that tag (or standing alone for a language without one). A tag that is neither English,
    // shipped nor overridden is refused, and so is a bad PO file or an entry whose msgstr is not
    // a valid ICU message. English is always available to fall back on.
    static Result<std::shared_ptr<const Languages>> make(const std::vector<std::string> &tags,
                                                         const std::map<std::string, std::string> &overrides = {});
    // English alone (no signin_languages).
    static std::shared_ptr<const Languages> english();

    std::size_t size() const { return langs_.size(); }
    const std::string &tag(std::size_t lang) const { return langs_.at(lang).tag; }
    // Written right to left (Arabic, Hebrew, Persian, Urdu): dir="rtl" on the pages.
    bool rtl(std::size_t lang) const { return langs_.at(lang).rtl; }
    // The language's own name for itself ("Deutsch"), for the picker.
    std::string native_name(std::size_t lang) const;
    // A configured language by tag (ignoring case), or nullopt.
    std::optional<std::size_t> find(std::string_view tag) const;

    // The language of a request: the svc_lang cookie when it names a configured language, else
    // the RFC 4647 lookup of Accept-Language among the configured tags, else 0. Any header (empty,
    // too long, garbage, "*") gives an answer, never an error.
    std::size_t choose(std::string_view cookie, std::string_view accept_language) const;

    // The translation of `english` (a msgid), or `english` itself when the catalog lacks it.
    std::string_view text(std::size_t lang, std::string_view english) const;
    // text() formatted as an ICU MessageFormat pattern with `args` in the language's locale.
    // A pattern ICU refuses (only possible for English text never checked at start) is returned
    // as it stands.
    std::string format(std::size_t lang, std::string_view english, const std::vector<Arg> &args = {}) const;
    // A moment (ms since the epoch) as the language writes a date and time, in UTC and saying so
    // ("November 29, 2026 at 3:20 AM UTC", "29. November 2026 um 03:20 UTC").
    std::string format_time(std::size_t lang, std::int64_t unix_ms) const;
    // Whether the language's catalog has its own text for `english`.
    bool translates(std::size_t lang, std::string_view english) const;

private:
    struct Lang {
        std::string tag;
        bool rtl = false;
        std::map<std::string, std::string, std::less<>> strings;  // msgid -> msgstr
    };
    std::vector<Lang> langs_;
};

// The ranges of an Accept-Language header (RFC 9110 12.5.4), best first (by q, then by order),
// without those of q=0 and without "*"; at most 32, each of at most 64 characters. Malformed
// members are skipped.
std::vector<std::string> accept_language_ranges(std::string_view header);
// RFC 4647 3.4 lookup of one range among `tags`: the range, then the range cut at its last '-'
// (a single-character subtag is cut with the one before it), until a tag matches ignoring case.
std::optional<std::size_t> lookup(std::string_view range, const std::vector<std::string> &tags);

// The language of the request this thread works for (a signin_languages tag; "" when none, as for
// signin-admin): an email a request causes is written in it, and a sign-in keeps it on the account
// for later notices. The transport sets it around the engine calls of one request; the calls read
// it where they make a Delivery, so that no capability's signature carries it.
class RequestLanguage {
public:
    explicit RequestLanguage(std::string tag);
    ~RequestLanguage();
    RequestLanguage(const RequestLanguage &) = delete;
    RequestLanguage &operator=(const RequestLanguage &) = delete;
    static const std::string &current();

private:
    std::string previous_;
};

// Whether a string is a language tag as signin_languages takes it: letters, digits and '-', the
// first subtag 2 or 3 letters, at most 35 characters.
bool valid_tag(std::string_view tag);

}  // namespace signin::i18n
