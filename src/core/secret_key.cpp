// The secret key file (secret_key.hpp).
#include "signin/secret_key.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <sstream>

#include "encoding.hpp"

namespace signin {
namespace {

constexpr char kKeyComment[] =
    "# ngx_signin secret key (signin_secret_key). Keep it secret and back it up apart from the store:\n"
    "# without it, emails waiting in the outbox cannot be sent and assertions cannot be verified.\n";
constexpr char kGeneration[] = "assertion-generation ";

Error key_error(const std::string &path, const std::string &why) {
    return Error{Code::Internal, "signin_secret_key \"" + path + "\": " + why};
}

std::optional<KeyFile> parse(std::string &text) {
    std::istringstream lines(text);
    std::string line;
    std::optional<KeyFile> out;
    bool have_key = false, have_generation = false;
    KeyFile f;
    bool ok = true;
    while (ok && std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        if (line.rfind(kGeneration, 0) == 0) {
            const std::string n = line.substr(sizeof kGeneration - 1);
            ok = !have_generation && !n.empty() && n.size() <= 9 &&
                 n.find_first_not_of("0123456789") == std::string::npos;
            if (ok) f.assertion_generation = std::stoull(n);
            ok = ok && f.assertion_generation >= 1;
            have_generation = true;
            continue;
        }
        auto raw = enc::base64url_decode(line);
        ok = !have_key && raw && raw->size() == 32;
        if (ok) std::memcpy(f.key.data(), raw->data(), 32);
        if (raw) sodium_memzero(raw->data(), raw->size());
        sodium_memzero(line.data(), line.size());
        have_key = true;
    }
    if (ok && have_key) out = f;
    sodium_memzero(f.key.data(), f.key.size());
    return out;
}

std::optional<std::string> read_all(int fd) {
    std::string text;
    char buf[512];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > 64 * 1024) return std::nullopt;
    }
    sodium_memzero(buf, sizeof buf);
    return text;
}

// Writes text to path through a temporary file: linked in place when `exclusive` (fails with
// EEXIST if the file appeared), renamed over it otherwise. 0 or an errno.
int write_file(const std::string &path, std::string &text, bool exclusive, const struct stat *like) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return errno;
    bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
    if (ok && like != nullptr && fchown(fd, like->st_uid, like->st_gid) != 0 && errno != EPERM) ok = false;
    int err = ok ? 0 : (errno ? errno : EIO);
    if (close(fd) != 0 && ok) err = errno;
    if (err == 0) err = (exclusive ? link(tmp.c_str(), path.c_str()) : rename(tmp.c_str(), path.c_str())) == 0 ? 0 : errno;
    unlink(tmp.c_str());
    return err;
}

}  // namespace

std::string key_file_text(const KeyFile &file) {
    std::string text = std::string(kKeyComment) + enc::base64url(file.key.data(), file.key.size()) + "\n";
    if (file.assertion_generation != 1) text += kGeneration + std::to_string(file.assertion_generation) + "\n";
    return text;
}

Result<KeyFile> load_key_file(const std::string &path, bool create) {
    if (sodium_init() < 0) return key_error(path, "libsodium could not be initialised");
    for (int round = 0; round < 2; ++round) {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
            struct stat st {};
            if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return key_error(path, "not a regular file");
            }
            if (st.st_mode & 077) {
                close(fd);
                return key_error(path, "readable by others: chmod 600 it");
            }
            auto text = read_all(fd);
            close(fd);
            if (!text) return key_error(path, "cannot be read");
            auto f = parse(*text);
            sodium_memzero(text->data(), text->size());
            if (!f) {
                return key_error(path, "not a key file (one line of 43 base64url characters, and optionally "
                                       "\"assertion-generation N\", expected)");
            }
            return *f;
        }
        if (errno != ENOENT) return key_error(path, std::strerror(errno));
        if (!create) return key_error(path, "does not exist");
        KeyFile f;
        randombytes_buf(f.key.data(), f.key.size());
        std::string text = key_file_text(f);
        int err = write_file(path, text, true, nullptr);
        sodium_memzero(text.data(), text.size());
        if (err == 0) return f;
        if (err != EEXIST) return key_error(path, std::string("cannot create it: ") + std::strerror(err));
        // another process made it first: read theirs
    }
    return key_error(path, "cannot be read");
}

Result<std::uint64_t> rotate_assertion_key(const std::string &path) {
    auto f = load_key_file(path, false);
    if (!f) return f.error();
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return key_error(path, std::strerror(errno));
    KeyFile next = f.value();
    next.assertion_generation += 1;
    std::string text = key_file_text(next);
    int err = write_file(path, text, false, &st);
    sodium_memzero(text.data(), text.size());
    sodium_memzero(next.key.data(), next.key.size());
    if (err != 0) return key_error(path, std::string("cannot rewrite it: ") + std::strerror(err));
    return next.assertion_generation;
}

std::string seal(const SecretKey &key, std::string_view plain, std::string_view ad) {
    constexpr std::size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
    std::string out(nb + plain.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
    auto *nonce = reinterpret_cast<unsigned char *>(out.data());
    randombytes_buf(nonce, nb);
    unsigned long long len = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + nb, &len, reinterpret_cast<const unsigned char *>(plain.data()),
                                               plain.size(), reinterpret_cast<const unsigned char *>(ad.data()),
                                               ad.size(), nullptr, nonce, key.data());
    out.resize(nb + len);
    return out;
}

std::optional<Secret> open_sealed(const SecretKey &key, std::string_view sealed, std::string_view ad) {
    constexpr std::size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
    if (sealed.size() < nb + crypto_aead_xchacha20poly1305_ietf_ABYTES) return std::nullopt;
    std::string plain(sealed.size() - nb - crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
    unsigned long long len = 0;
    const auto *nonce = reinterpret_cast<const unsigned char *>(sealed.data());
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char *>(plain.data()), &len, nullptr,
                                                   nonce + nb, sealed.size() - nb,
                                                   reinterpret_cast<const unsigned char *>(ad.data()), ad.size(), nonce,
                                                   key.data()) != 0) {
        return std::nullopt;
    }
    plain.resize(len);
    return Secret(std::move(plain));
}

}  // namespace signin
