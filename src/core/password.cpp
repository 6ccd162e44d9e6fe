// Passwords: NFC (ICU), Argon2id (libsodium), the built-in policy and the breached-password list.
#include "signin/password.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace signin::password {
namespace {

#include "data/common_list.inc"

// The list as sorted views into the compiled-in chunks, built once.
const std::vector<std::string_view> &common_index() {
    static const std::vector<std::string_view> index = [] {
        std::vector<std::string_view> v;
        v.reserve(kCommonCount);
        for (const char *chunk : kCommonChunks) {
            std::string_view rest(chunk);
            while (!rest.empty()) {
                std::size_t nl = rest.find('\n');
                if (nl == std::string_view::npos) nl = rest.size();
                if (nl > 0) v.push_back(rest.substr(0, nl));
                rest.remove_prefix(std::min(rest.size(), nl + 1));
            }
        }
        std::sort(v.begin(), v.end());  // already sorted by the generator; cheap insurance
        return v;
    }();
    return index;
}

Error weak(std::string message) { return Error{Code::WeakPassword, std::move(message)}; }

// Decoded code points of valid UTF-8 (the policy's shape rules work on characters).
std::u32string decode(std::string_view s) {
    std::u32string out;
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        char32_t cp = 0;
        std::size_t n = 1;
        if (c < 0x80) {
            cp = c;
        } else if ((c >> 5) == 0x6) {
            cp = c & 0x1Fu;
            n = 2;
        } else if ((c >> 4) == 0xE) {
            cp = c & 0x0Fu;
            n = 3;
        } else {
            cp = c & 0x07u;
            n = 4;
        }
        for (std::size_t k = 1; k < n && i + k < s.size(); ++k) {
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
        }
        out.push_back(cp);
        i += n;
    }
    return out;
}

char32_t lower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// The shortest unit the whole text repeats (the text itself when it does not).
std::size_t repeat_unit(const std::u32string &s) {
    const std::size_t n = s.size();
    for (std::size_t len = 1; len <= n / 2; ++len) {
        if (n % len != 0) continue;
        bool same = true;
        for (std::size_t i = len; i < n && same; ++i) same = s[i] == s[i - len];
        if (same) return len;
    }
    return n;
}

// Keyboard rows, digits and the alphabet, forwards; a "run" steps along one of them either way.
constexpr std::array<std::string_view, 8> kRows = {
    "`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./", "abcdefghijklmnopqrstuvwxyz",
    "!@#$%^&*()_+", "qwertzuiop", "azertyuiop",
};

bool adjacent(char32_t a, char32_t b) {
    if (a == b) return true;
    if (a > 0x7E || b > 0x7E) return false;
    for (std::string_view row : kRows) {
        std::size_t i = row.find(static_cast<char>(a));
        if (i == std::string_view::npos) continue;
        if (i + 1 < row.size() && row[i + 1] == static_cast<char>(b)) return true;
        if (i > 0 && row[i - 1] == static_cast<char>(b)) return true;
    }
    return false;
}

// Simple leetspeak undone: every choice for the ambiguous '1' and '|' is tried by the caller.
char32_t unleet(char32_t c, bool one_is_l) {
    switch (c) {
    case '0': return 'o';
    case '1': return one_is_l ? 'l' : 'i';
    case '!': return 'i';
    case '|': return one_is_l ? 'l' : 'i';
    case '3': return 'e';
    case '4': return 'a';
    case '@': return 'a';
    case '5': return 's';
    case '$': return 's';
    case '7': return 't';
    case '+': return 't';
    case '8': return 'b';
    case '9': return 'g';
    case '6': return 'g';
    case '2': return 'z';
    default: return lower(c);
    }
}

bool is_decoration(char32_t c) {
    return (c >= '0' && c <= '9') || (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')));
}

bool ascii_word(const std::u32string &s, std::string &out) {
    out.clear();
    for (char32_t c : s) {
        if (c > 0x7F) return false;
        out.push_back(static_cast<char>(c));
    }
    return true;
}

// Whether the text is one common word (or a common word repeated), decorated with digits,
// symbols, capitals and leetspeak at either end or inside.
bool decorated_common_word(const std::u32string &text) {
    // strip decoration at both ends, then undo leetspeak in what is left
    std::size_t b = 0, e = text.size();
    while (b < e && is_decoration(text[b])) ++b;
    while (e > b && is_decoration(text[e - 1])) --e;
    std::u32string cores[2] = {text.substr(b, e - b), text};  // also the leet form of the whole
    for (const auto &core : cores) {
        for (bool one_is_l : {false, true}) {
            std::u32string w;
            for (char32_t c : core) w.push_back(unleet(c, one_is_l));
            // a leet digit at the end may be decoration after all: strip again
            while (!w.empty() && is_decoration(w.back())) w.pop_back();
            while (!w.empty() && is_decoration(w.front())) w.erase(w.begin());
            if (w.size() < 4) continue;
            std::u32string unit = w.substr(0, repeat_unit(w));
            std::string ascii;
            if (ascii_word(unit, ascii) && is_common(ascii)) return true;
        }
    }
    return false;
}

// Whether most of the text steps along a keyboard row, the digits or the alphabet.
bool keyboard_run(const std::u32string &text) {
    if (text.size() < 2) return false;
    std::size_t steps = 0;
    for (std::size_t i = 1; i < text.size(); ++i) {
        if (adjacent(lower(text[i - 1]), lower(text[i]))) ++steps;
    }
    // at most one jump (between two runs, or one odd character) is still a run
    return steps + 2 >= text.size();
}

}  // namespace

std::optional<std::string> normalize_nfc(std::string_view utf8) {
    if (utf8.size() > static_cast<std::size_t>(INT32_MAX / 4)) return std::nullopt;
    UErrorCode err = U_ZERO_ERROR;
    const UNormalizer2 *nfc = unorm2_getNFCInstance(&err);
    if (U_FAILURE(err)) return std::nullopt;
    // UTF-8 → UTF-16 (refusing ill-formed input), normalize, and back
    int32_t len16 = 0;
    u_strFromUTF8(nullptr, 0, &len16, utf8.data(), static_cast<int32_t>(utf8.size()), &err);
    if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) return std::nullopt;
    err = U_ZERO_ERROR;
    std::u16string src(static_cast<std::size_t>(len16), u'\0');
    u_strFromUTF8(reinterpret_cast<UChar *>(src.data()), len16, nullptr, utf8.data(),
                  static_cast<int32_t>(utf8.size()), &err);
    if (U_FAILURE(err)) return std::nullopt;
    std::u16string dst(src.size() * 3 + 16, u'\0');
    int32_t n = unorm2_normalize(nfc, reinterpret_cast<const UChar *>(src.data()), len16,
                                 reinterpret_cast<UChar *>(dst.data()), static_cast<int32_t>(dst.size()), &err);
    if (err == U_BUFFER_OVERFLOW_ERROR) {
        err = U_ZERO_ERROR;
        dst.assign(static_cast<std::size_t>(n), u'\0');
        n = unorm2_normalize(nfc, reinterpret_cast<const UChar *>(src.data()), len16,
                             reinterpret_cast<UChar *>(dst.data()), n, &err);
    }
    if (U_FAILURE(err)) return std::nullopt;
    int32_t len8 = 0;
    u_strToUTF8(nullptr, 0, &len8, reinterpret_cast<const UChar *>(dst.data()), n, &err);
    if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) return std::nullopt;
    err = U_ZERO_ERROR;
    std::string out(static_cast<std::size_t>(len8), '\0');
    u_strToUTF8(out.data(), len8, nullptr, reinterpret_cast<const UChar *>(dst.data()), n, &err);
    sodium_memzero(src.data(), src.size() * sizeof(char16_t));
    sodium_memzero(dst.data(), dst.size() * sizeof(char16_t));
    if (U_FAILURE(err)) return std::nullopt;
    return out;
}

std::size_t code_points(std::string_view utf8) {
    return static_cast<std::size_t>(
        std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

Result<std::string> hash(std::string_view nfc_password, const HashParams &params) {
    char out[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str_alg(out, nfc_password.data(), nfc_password.size(), params.opslimit, params.memlimit,
                              crypto_pwhash_ALG_ARGON2ID13) != 0) {
        return Error{Code::Internal, "password hashing failed (out of memory)"};
    }
    return std::string(out);
}

bool verify(std::string_view phc, std::string_view nfc_password) {
    if (phc.empty() || phc.size() >= crypto_pwhash_STRBYTES) return false;
    char buf[crypto_pwhash_STRBYTES] = {};
    std::memcpy(buf, phc.data(), phc.size());
    return crypto_pwhash_str_verify(buf, nfc_password.data(), nfc_password.size()) == 0;
}

bool needs_rehash(std::string_view phc, const HashParams &params) {
    if (phc.size() >= crypto_pwhash_STRBYTES) return true;
    char buf[crypto_pwhash_STRBYTES] = {};
    std::memcpy(buf, phc.data(), phc.size());
    if (phc.substr(0, 10) != "$argon2id$") return true;
    return crypto_pwhash_str_needs_rehash(buf, params.opslimit, params.memlimit) != 0;
}

const std::string &dummy_hash(const HashParams &params) {
    static std::mutex mu;
    static std::map<std::pair<unsigned long long, std::size_t>, std::string> made;
    std::lock_guard<std::mutex> lock(mu);
    auto &h = made[{params.opslimit, params.memlimit}];
    if (h.empty()) {
        unsigned char random[24];
        randombytes_buf(random, sizeof random);
        auto r = hash(std::string_view(reinterpret_cast<const char *>(random), sizeof random), params);
        if (!r) throw std::bad_alloc();
        h = std::move(r.value());
    }
    return h;
}

bool is_common(std::string_view word) {
    const auto &idx = common_index();
    return std::binary_search(idx.begin(), idx.end(), word);
}

std::size_t common_list_size() { return common_index().size(); }

Status check_policy(std::string_view nfc, unsigned min_length) {
    if (nfc.size() > kMaxBytes) {
        return weak("Use at most " + std::to_string(kMaxBytes) + " bytes; this password has " +
                    std::to_string(nfc.size()) + ".");
    }
    const std::size_t n = code_points(nfc);
    if (n < min_length) {
        return weak("Use at least " + std::to_string(min_length) + " characters; this password has " +
                    std::to_string(n) + ". A few unrelated words make a long password easy to remember.");
    }
    const std::u32string text = decode(nfc);
    std::string ascii_lower;
    {
        std::u32string l;
        for (char32_t c : text) l.push_back(lower(c));
        if (ascii_word(l, ascii_lower) && is_common(ascii_lower)) {
            return weak("This password is on a list of common passwords that attackers try first; choose "
                        "another one.");
        }
    }
    std::set<char32_t> distinct;
    for (char32_t c : text) distinct.insert(lower(c));
    if (distinct.size() < 5) {
        return weak("This password uses only " + std::to_string(distinct.size()) +
                    " different characters; use more variety, for example a few unrelated words.");
    }
    if (repeat_unit(text) < text.size()) {
        return weak("This password repeats the same part over and over; use something that does not repeat.");
    }
    if (keyboard_run(text)) {
        return weak("This password follows a keyboard row or an alphabet or number sequence; choose "
                    "something that does not.");
    }
    if (decorated_common_word(text)) {
        return weak("This password is a common word with numbers, symbols, capitals or letter swaps added, "
                    "which attackers try early; add more unrelated words instead.");
    }
    return ok_status();
}

// ------------------------------------------------------------------ blocklist

Result<std::shared_ptr<const Blocklist>> Blocklist::open(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error{Code::InvalidRequest, "cannot open \"" + path + "\": " + std::strerror(errno)};
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        ::close(fd);
        return Error{Code::InvalidRequest, "cannot stat \"" + path + "\""};
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size % 32 != 0) {
        ::close(fd);
        return Error{Code::InvalidRequest,
                     "\"" + path + "\" is not a list of 32-byte SHA-256 digests (its size is not a multiple of 32)"};
    }
    std::shared_ptr<Blocklist> list(new Blocklist());
    if (size > 0) {
        void *p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            return Error{Code::InvalidRequest, "cannot map \"" + path + "\": " + std::strerror(errno)};
        }
        list->data_ = static_cast<const unsigned char *>(p);
        list->map_len_ = size;
        list->count_ = size / 32;
    }
    ::close(fd);
    for (std::size_t i = 1; i < list->count_; ++i) {
        if (std::memcmp(list->data_ + (i - 1) * 32, list->data_ + i * 32, 32) >= 0) {
            return Error{Code::InvalidRequest,
                         "\"" + path + "\" is not sorted (digest " + std::to_string(i) +
                             "): make it with the command in docs/passwords.md"};
        }
    }
    return std::shared_ptr<const Blocklist>(std::move(list));
}

Blocklist::~Blocklist() {
    if (data_) munmap(const_cast<unsigned char *>(data_), map_len_);
}

bool Blocklist::contains_digest(const unsigned char digest[32]) const {
    std::size_t lo = 0, hi = count_;
    while (lo < hi) {
        std::size_t mid = lo + (hi - lo) / 2;
        int c = std::memcmp(data_ + mid * 32, digest, 32);
        if (c == 0) return true;
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return false;
}

bool Blocklist::contains(std::string_view nfc_password) const {
    unsigned char d[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(d, reinterpret_cast<const unsigned char *>(nfc_password.data()), nfc_password.size());
    bool found = contains_digest(d);
    sodium_memzero(d, sizeof d);
    return found;
}

PasswordChecker blocklist_checker(std::shared_ptr<const Blocklist> list) {
    return [list = std::move(list)](std::string_view nfc) -> Status {
        if (list && list->contains(nfc)) {
            return Error{Code::WeakPassword,
                         "This password has appeared in a data breach, so attackers will try it; choose another one."};
        }
        return ok_status();
    };
}

}  // namespace signin::password
