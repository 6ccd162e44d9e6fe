// A latency probe: GET PATH with a bearer token over one keep-alive loopback connection, one
// request every 1/RATE seconds (a fixed offered load, so that a slow answer cannot hold back the
// requests behind it the way a closed-loop load generator's do), for SECONDS.
// Prints "requests p50 p99 p99.9 max" in milliseconds; exits 1 on any answer that is not 200.
//
//   probe PORT PATH BEARER RATE SECONDS
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int fail(const char *what) {
    std::perror(what);
    return 1;
}

// Reads one answer; false on a closed connection, a status other than 200 or no Content-Length.
bool read_answer(int fd, std::string &buf) {
    buf.clear();
    char chunk[16384];
    std::size_t body_at = std::string::npos, length = 0;
    for (;;) {
        if (body_at != std::string::npos && buf.size() - body_at >= length) return true;
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got <= 0) return false;
        buf.append(chunk, static_cast<std::size_t>(got));
        if (body_at != std::string::npos) continue;
        std::size_t end = buf.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        if (buf.compare(0, 12, "HTTP/1.1 200") != 0) {
            std::fprintf(stderr, "probe: answer %.40s\n", buf.c_str());
            return false;
        }
        const char *cl = strcasestr(buf.c_str(), "\r\ncontent-length:");
        if (cl == nullptr || cl > buf.c_str() + end) {
            std::fprintf(stderr, "probe: answer without Content-Length\n");
            return false;
        }
        length = std::strtoul(cl + 17, nullptr, 10);
        body_at = end + 4;
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: probe PORT PATH BEARER RATE SECONDS\n");
        return 2;
    }
    const int port = std::atoi(argv[1]);
    const double rate = std::atof(argv[4]), seconds = std::atof(argv[5]);
    const std::string request = std::string("GET ") + argv[2] + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                argv[3] + "\r\n\r\n";

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return fail("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) return fail("connect");

    const auto count = static_cast<std::size_t>(rate * seconds);
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate));
    std::vector<double> ms;
    ms.reserve(count);
    std::string buf;
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
        std::this_thread::sleep_until(start + interval * static_cast<long>(i));
        const Clock::time_point sent = Clock::now();
        if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return fail("write");
        if (!read_answer(fd, buf)) return fail("read");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
    }
    close(fd);
    if (ms.empty()) return 1;
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
    std::printf("%zu %.3f %.3f %.3f %.3f\n", ms.size(), at(0.5), at(0.99), at(0.999), ms.back());
    return 0;
}
