// The languages of the pages and emails (signin/i18n.hpp): PO catalogs, the choice of a language
// for a request, and ICU-formatted messages.
//
// The PO files are read here rather than with gettext's libgettextpo: the shipped catalogs are
// embedded in the module (it is one .so with nothing installed beside it) and libgettextpo reads
// only named files; the subset of PO that catalogs use (entries of quoted strings with C escapes,
// comments, flags) is small, and every shipped catalog is also checked by `msgfmt --check` in the
// tests. Message formatting (plural rules of every language, localized digits) is ICU's.
#include "signin/i18n.hpp"

#include <unicode/datefmt.h>
#include <unicode/locid.h>
#include <unicode/msgfmt.h>
#include <unicode/timezone.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <set>

#include "embedded_data.hpp"

namespace signin::i18n {
namespace {

constexpr std::size_t kMaxPoBytes = 4u << 20;
constexpr std::size_t kMaxPoEntries = 20000;
constexpr std::size_t kMaxHeader = 4096;
constexpr std::size_t kMaxRanges = 32;
constexpr std::size_t kMaxRange = 64;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

bool same_tag(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); i++) {
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// One quoted PO string at the start of s: appended to out, s left after it. False when malformed.
bool quoted(std::string_view &s, std::string &out) {
    if (s.empty() || s.front() != '"') return false;
    s.remove_prefix(1);
    while (!s.empty()) {
        const char c = s.front();
        s.remove_prefix(1);
        if (c == '"') {
            s = trim(s);
            return s.empty();  // nothing may follow the closing quote on its line
        }
        if (c != '\\') {
            out.push_back(c);
            continue;
        }
        if (s.empty()) return false;
        const char e = s.front();
        s.remove_prefix(1);
        switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '"': case '\\': case '\'': case '?': out.push_back(e); break;
        default: return false;
        }
    }
    return false;
}

Error po_error(std::size_t line, std::string_view what) {
    return Error{Code::InvalidRequest, "line " + std::to_string(line) + ": " + std::string(what)};
}

// RTL scripts among the languages a site may configure.
bool rtl_language(std::string_view tag) {
    const std::string_view primary = tag.substr(0, tag.find('-'));
    for (std::string_view l : {"ar", "he", "fa", "ur", "ps", "yi", "dv", "ckb", "sd", "ug"}) {
        if (same_tag(primary, l)) return true;
    }
    return false;
}

icu::UnicodeString unicode(std::string_view s) {
    return icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<std::int32_t>(s.size())));
}

std::string utf8(const icu::UnicodeString &u) {
    std::string out;
    u.toUTF8String(out);
    return out;
}

icu::Locale locale_of(std::string_view tag) {
    UErrorCode status = U_ZERO_ERROR;
    icu::Locale l = icu::Locale::forLanguageTag(icu::StringPiece(tag.data(), static_cast<std::int32_t>(tag.size())), status);
    return U_FAILURE(status) ? icu::Locale::getRoot() : l;
}

// Whether ICU takes `pattern` as a message; `why` says what it refused.
bool valid_message(std::string_view pattern, std::string_view tag, std::string *why) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse{};
    icu::MessageFormat f(unicode(pattern), locale_of(tag), parse, status);
    if (U_FAILURE(status)) {
        if (why) *why = std::string("not a valid ICU message (") + u_errorName(status) + ")";
        return false;
    }
    return true;
}

}  // namespace

Arg text_arg(std::string name, std::string value) { return Arg{std::move(name), std::move(value), 0, false}; }
Arg number_arg(std::string name, double value) { return Arg{std::move(name), {}, value, true}; }

namespace {

// parse_po's state between lines: the entry being read, and which of its strings a line that is
// only a quoted string continues.
class PoReader {
public:
    Status line(std::string_view line, std::size_t line_no);
    Status finish();
    std::vector<PoEntry> entries;

private:
    Status keyword(std::string_view line, std::size_t line_no);
    Status msgstr(std::string_view keyword, std::string value, std::size_t line_no);

    enum class Field { None, Context, Id, Plural, Text, OtherText } field_ = Field::None;
    PoEntry cur_;
    bool has_id_ = false, has_text_ = false, next_fuzzy_ = false;
    std::set<std::pair<std::string, std::string>> seen_;
};

Status PoReader::finish() {
    if (!has_id_ && !has_text_ && cur_.context.empty() && field_ == Field::None) return ok_status();
    if (!has_id_) return po_error(cur_.line, "an entry without msgid");
    if (!has_text_) return po_error(cur_.line, "msgid without msgstr");
    if (!seen_.insert({cur_.context, cur_.id}).second) return po_error(cur_.line, "a msgid given twice");
    if (entries.size() >= kMaxPoEntries) return po_error(cur_.line, "more than 20000 entries");
    entries.push_back(std::move(cur_));
    cur_ = PoEntry{};
    has_id_ = has_text_ = false;
    field_ = Field::None;
    return ok_status();
}

Status PoReader::line(std::string_view line, std::size_t line_no) {
    if (line.empty()) return ok_status();
    if (line.front() == '#') {
        if (line.substr(0, 2) == "#~") return ok_status();  // an obsolete entry: kept for translators, not used
        if (line.substr(0, 2) == "#," && line.substr(2).find("fuzzy") != std::string_view::npos) next_fuzzy_ = true;
        return ok_status();
    }
    if (line.front() != '"') return keyword(line, line_no);
    std::string *target = field_ == Field::Context ? &cur_.context
                          : field_ == Field::Id    ? &cur_.id
                          : field_ == Field::Text  ? &cur_.text
                                                   : nullptr;
    std::string ignored;
    if (field_ == Field::None) return po_error(line_no, "a string outside any msgid or msgstr");
    if (!quoted(line, target ? *target : ignored)) return po_error(line_no, "a malformed quoted string");
    return ok_status();
}

Status PoReader::keyword(std::string_view line, std::size_t line_no) {
    const std::size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos) return po_error(line_no, "a keyword without its string");
    const std::string_view keyword = line.substr(0, space);
    std::string_view rest = trim(line.substr(space));
    std::string value;
    if (!quoted(rest, value)) return po_error(line_no, "a malformed quoted string");
    if (keyword == "msgctxt" || (keyword == "msgid" && field_ != Field::Context)) {
        if (has_id_ || has_text_ || field_ == Field::Context) {
            if (auto s = finish(); !s) return s;
        }
        cur_.line = line_no;
        cur_.fuzzy = next_fuzzy_;
        next_fuzzy_ = false;
    }
    if (keyword == "msgctxt") {
        cur_.context = std::move(value);
        field_ = Field::Context;
    } else if (keyword == "msgid") {
        if (has_id_) return po_error(line_no, "a second msgid in one entry");
        cur_.id = std::move(value);
        has_id_ = true;
        field_ = Field::Id;
    } else if (keyword == "msgid_plural") {
        if (!has_id_ || has_text_) return po_error(line_no, "msgid_plural out of place");
        field_ = Field::Plural;
    } else if (keyword == "msgstr" || keyword.substr(0, 7) == "msgstr[") {
        return msgstr(keyword, std::move(value), line_no);
    } else {
        return po_error(line_no, "unknown keyword \"" + std::string(keyword.substr(0, 32)) + "\"");
    }
    return ok_status();
}

// msgstr, or msgstr[N] of a plural entry: the first form is the text; the others are read and
// set aside (the module's messages carry their plurals inside ICU's syntax).
Status PoReader::msgstr(std::string_view keyword, std::string value, std::size_t line_no) {
    if (!has_id_) return po_error(line_no, "msgstr without msgid");
    const bool first = keyword == "msgstr" || keyword == "msgstr[0]";
    if (first && has_text_) return po_error(line_no, "a second msgstr in one entry");
    if (!first) {
        const std::string_view n = keyword.substr(7);
        if (n.size() < 2 || n.back() != ']' || !std::all_of(n.begin(), n.end() - 1, digit) || !has_text_) {
            return po_error(line_no, "a malformed msgstr[N]");
        }
        field_ = Field::OtherText;
        return ok_status();
    }
    cur_.text = std::move(value);
    has_text_ = true;
    field_ = Field::Text;
    return ok_status();
}

}  // namespace

Result<std::vector<PoEntry>> parse_po(std::string_view text) {
    if (text.size() > kMaxPoBytes) return Error{Code::InvalidRequest, "the PO file is larger than 4 MiB"};
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a BOM some editors write
    PoReader reader;
    std::size_t pos = 0, line_no = 0;
    while (pos <= text.size()) {
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        const std::string_view line = trim(text.substr(pos, eol - pos));
        pos = eol + 1;
        if (auto s = reader.line(line, ++line_no); !s) return s.error();
    }
    if (auto s = reader.finish(); !s) return s.error();
    return std::move(reader.entries);
}

namespace {
thread_local std::string t_request_language;
}  // namespace

RequestLanguage::RequestLanguage(std::string tag) : previous_(std::move(t_request_language)) {
    t_request_language = std::move(tag);
}
RequestLanguage::~RequestLanguage() { t_request_language = std::move(previous_); }
const std::string &RequestLanguage::current() { return t_request_language; }

bool valid_tag(std::string_view tag) {
    if (tag.empty() || tag.size() > 35) return false;
    const std::string_view primary = tag.substr(0, tag.find('-'));
    if (primary.size() < 2 || primary.size() > 3 || !std::all_of(primary.begin(), primary.end(), alpha)) return false;
    std::size_t run = 0;
    for (char c : tag) {
        if (c == '-') {
            if (run == 0) return false;
            run = 0;
        } else if (alpha(c) || digit(c)) {
            if (++run > 8) return false;
        } else {
            return false;
        }
    }
    return run > 0;
}

std::vector<std::string> accept_language_ranges(std::string_view header) {
    struct Weighted {
        std::string range;
        int q;  // thousandths
        std::size_t order;
    };
    std::vector<Weighted> found;
    if (header.size() > kMaxHeader) header = header.substr(0, kMaxHeader);  // the rest is not read
    std::size_t order = 0;
    while (!header.empty() && found.size() < kMaxRanges) {
        const std::size_t comma = header.find(',');
        std::string_view member = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
        const std::size_t semi = member.find(';');
        const std::string_view range = trim(member.substr(0, semi));
        int q = 1000;
        if (semi != std::string_view::npos) {
            std::string_view param = trim(member.substr(semi + 1));
            if (param.size() < 3 || lower(param[0]) != 'q' || param[1] != '=') continue;
            param.remove_prefix(2);
            // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
            if (param.empty() || (param[0] != '0' && param[0] != '1')) continue;
            int value = (param[0] - '0') * 1000;
            std::size_t i = 1, scale = 100;
            bool ok = true;
            if (i < param.size()) {
                ok = param[i] == '.' && param.size() <= 5;
                for (i = 2; ok && i < param.size(); i++, scale /= 10) {
                    ok = digit(param[i]);
                    if (ok) value += (param[i] - '0') * static_cast<int>(scale);
                }
            }
            if (!ok || value > 1000) continue;
            q = value;
        }
        if (range.empty() || range.size() > kMaxRange || range == "*" || q == 0) continue;
        if (!std::all_of(range.begin(), range.end(), [](char c) { return alpha(c) || digit(c) || c == '-'; })) {
            continue;
        }
        found.push_back({std::string(range), q, order++});
    }
    std::stable_sort(found.begin(), found.end(), [](const Weighted &a, const Weighted &b) { return a.q > b.q; });
    std::vector<std::string> out;
    out.reserve(found.size());
    for (auto &w : found) out.push_back(std::move(w.range));
    return out;
}

std::optional<std::size_t> lookup(std::string_view range, const std::vector<std::string> &tags) {
    while (!range.empty()) {
        for (std::size_t i = 0; i < tags.size(); i++) {
            if (same_tag(tags[i], range)) return i;
        }
        std::size_t dash = range.rfind('-');
        if (dash == std::string_view::npos) break;
        // a singleton ("x" in "de-x-foo") goes with the subtag after it
        if (dash >= 2 && range[dash - 2] == '-') dash -= 2;
        range = range.substr(0, dash);
    }
    return std::nullopt;
}

// ---- the catalogs

const std::vector<std::pair<std::string_view, std::string_view>> &Languages::shipped() {
    static const std::vector<std::pair<std::string_view, std::string_view>> all = [] {
        std::vector<std::pair<std::string_view, std::string_view>> out;
        for (std::size_t i = 0; i < i18n_data::kFileCount; i++) {
            std::string_view name = i18n_data::kFiles[i].name;
            if (name.size() < 4 || name.substr(name.size() - 3) != ".po") continue;
            out.emplace_back(name.substr(0, name.size() - 3), i18n_data::kFiles[i].body);
        }
        return out;
    }();
    return all;
}

bool Languages::is_shipped(std::string_view tag) {
    for (const auto &[t, body] : shipped()) {
        if (same_tag(t, tag)) return true;
    }
    return false;
}

namespace {

// Lays a PO file's entries over `strings` (each msgstr a valid message of `tag`).
Status apply(std::string_view po, std::string_view tag, std::map<std::string, std::string, std::less<>> &strings) {
    auto entries = parse_po(po);
    if (!entries) return entries.error();
    for (auto &e : entries.value()) {
        // the header, untranslated and fuzzy entries say nothing: the English text stands
        if (e.id.empty() || e.text.empty() || e.fuzzy || !e.context.empty()) continue;
        std::string why;
        if (!valid_message(e.text, tag, &why)) return po_error(e.line, why);
        strings[std::move(e.id)] = std::move(e.text);
    }
    return ok_status();
}

}  // namespace

Result<std::shared_ptr<const Languages>> Languages::make(const std::vector<std::string> &tags,
                                                         const std::map<std::string, std::string> &overrides) {
    auto out = std::make_shared<Languages>();
    if (tags.empty()) return Error{Code::InvalidRequest, "no language"};
    for (const std::string &tag : tags) {
        if (!valid_tag(tag)) return Error{Code::InvalidRequest, "\"" + tag + "\" is not a language tag"};
        if (out->find(tag)) return Error{Code::InvalidRequest, "\"" + tag + "\" is given twice"};
        Lang l;
        l.tag = tag;
        l.rtl = rtl_language(tag);
        bool known = same_tag(tag, "en");
        for (const auto &[t, body] : shipped()) {
            if (!same_tag(t, tag)) continue;
            if (auto s = apply(body, tag, l.strings); !s) {
                return Error{Code::InvalidRequest, "the shipped catalog of " + tag + ": " + s.error().message};
            }
            known = true;
        }
        for (const auto &[t, body] : overrides) {
            if (!same_tag(t, tag)) continue;
            if (auto s = apply(body, tag, l.strings); !s) return s.error();
            known = true;
        }
        if (!known) {
            return Error{Code::InvalidRequest, "no catalog for \"" + tag + "\": give one with signin_messages " + tag +
                                                   " FILE.po (shipped: en" + [] {
                                                       std::string list;
                                                       for (const auto &[t, b] : shipped()) list += " " + std::string(t);
                                                       return list;
                                                   }() + ")"};
        }
        out->langs_.push_back(std::move(l));
    }
    for (const auto &[t, body] : overrides) {
        if (!out->find(t)) return Error{Code::InvalidRequest, "signin_messages " + t + ": not in signin_languages"};
    }
    return std::shared_ptr<const Languages>(std::move(out));
}

std::shared_ptr<const Languages> Languages::english() {
    static const std::shared_ptr<const Languages> en = make({"en"}).value();
    return en;
}

std::optional<std::size_t> Languages::find(std::string_view tag) const {
    for (std::size_t i = 0; i < langs_.size(); i++) {
        if (same_tag(langs_[i].tag, tag)) return i;
    }
    return std::nullopt;
}

std::string Languages::native_name(std::size_t lang) const {
    const icu::Locale l = locale_of(tag(lang));
    icu::UnicodeString name;
    l.getDisplayName(l, name);
    if (name.isEmpty()) return tag(lang);
    // "français" as a choice in a list starts with a capital, as "Deutsch" does
    const UChar32 first = name.char32At(0);
    icu::UnicodeString head(u_totitle(first));
    name.replace(0, U16_LENGTH(first), head);
    return utf8(name);
}

std::size_t Languages::choose(std::string_view cookie, std::string_view accept_language) const {
    if (!cookie.empty() && cookie.size() <= 35) {
        if (auto i = find(cookie)) return *i;
    }
    if (langs_.size() < 2 || accept_language.empty()) return 0;
    std::vector<std::string> tags;
    tags.reserve(langs_.size());
    for (const Lang &l : langs_) tags.push_back(l.tag);
    for (const std::string &range : accept_language_ranges(accept_language)) {
        if (auto i = lookup(range, tags)) return *i;
    }
    return 0;
}

std::string_view Languages::text(std::size_t lang, std::string_view english) const {
    if (lang >= langs_.size()) return english;
    const auto &strings = langs_[lang].strings;
    const auto it = strings.find(english);
    return it == strings.end() ? english : std::string_view(it->second);
}

bool Languages::translates(std::size_t lang, std::string_view english) const {
    return lang < langs_.size() && langs_[lang].strings.count(english) > 0;
}

std::string Languages::format(std::size_t lang, std::string_view english, const std::vector<Arg> &args) const {
    const std::string_view pattern = text(lang, english);
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse{};
    icu::MessageFormat f(unicode(pattern), locale_of(lang < langs_.size() ? langs_[lang].tag : "en"), parse, status);
    if (U_FAILURE(status)) return std::string(pattern);
    std::vector<icu::UnicodeString> names;
    std::vector<icu::Formattable> values;
    names.reserve(args.size());
    values.reserve(args.size());
    for (const Arg &a : args) {
        names.push_back(unicode(a.name));
        values.push_back(a.is_number ? icu::Formattable(a.number) : icu::Formattable(unicode(a.text)));
    }
    icu::UnicodeString result;
    f.format(names.data(), values.data(), static_cast<std::int32_t>(args.size()), result, status);
    if (U_FAILURE(status)) return std::string(pattern);
    return utf8(result);
}

std::string Languages::format_time(std::size_t lang, std::int64_t unix_ms) const {
    UErrorCode status = U_ZERO_ERROR;
    // the date in words, the time and its zone, in the language's own order and digits
    std::unique_ptr<icu::DateFormat> f(icu::DateFormat::createInstanceForSkeleton(
        icu::UnicodeString("yMMMMdjmmz"), locale_of(lang < langs_.size() ? langs_[lang].tag : "en"), status));
    if (U_FAILURE(status) || !f) return {};
    f->adoptTimeZone(icu::TimeZone::createTimeZone("UTC"));
    icu::UnicodeString out;
    f->format(static_cast<UDate>(unix_ms), out);
    return utf8(out);
}

}  // namespace signin::i18n
