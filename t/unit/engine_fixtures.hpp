// Test doubles shared by the engine's unit tests: a settable clock and a delivery function that
// records what it is given (and can be told to fail).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sodium.h>

#include <cstring>
#include <string_view>

#include "signin/auth.hpp"
#include "pg_fixture.hpp"

namespace signin::testing {

// base64url without padding (what WebAuthn and JOSE write), by libsodium.
inline std::string b64(std::string_view s) {
    std::string out(sodium_base64_ENCODED_LEN(s.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char *>(s.data()), s.size(),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(std::strlen(out.c_str()));
    return out;
}

constexpr Millis kStart = 1795000000000;  // 2026-11-18T11:06:40Z

class FakeClock final : public Clock {
public:
    Millis now() const override { return now_.load(); }
    void set(Millis t) { now_.store(t); }
    void advance(Millis d) { now_.fetch_add(d); }

private:
    std::atomic<Millis> now_{kStart};
};

struct Mailer {
    std::mutex mu;
    std::vector<Delivery> sent;
    bool fail = false;

    DeliveryFn fn() {
        return [this](const Delivery &d) -> Status {
            std::lock_guard<std::mutex> lock(mu);
            sent.push_back(d);
            if (fail) return Error{Code::Internal, "smtp: connection refused"};
            return ok_status();
        };
    }
    std::size_t count() {
        std::lock_guard<std::mutex> lock(mu);
        return sent.size();
    }
    Delivery last() {
        std::lock_guard<std::mutex> lock(mu);
        return sent.back();
    }
};

// An engine over a fresh LMDB store in a temporary directory (removed afterwards), or over a
// schema of its own in the PostgreSQL that SIGNIN_TEST_PG names (./build.sh test runs the engine's
// tests both ways), with the fake clock and the recording mailer. A test fixture derives from it
// and says its policy (and origin, and whether it has the secret key) in make().
class EngineTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-engine-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        if (auto server = pg_server()) {
            pg_ = std::make_unique<PgSchema>(*server);
            PgOptions o;
            o.conninfo = pg_->conninfo();
            store_ = std::shared_ptr<Store>(open_pg_store(o));
            return;
        }
        LmdbOptions o;
        o.path = root_ + "/db";
        o.map_size = 1ull << 24;
        store_ = std::shared_ptr<Store>(open_lmdb_store(o));
    }
    void TearDown() override {
        id_.reset();
        store_.reset();
        pg_.reset();
        std::filesystem::remove_all(root_);
    }
    void make(const Policy &policy, bool with_key = true, const char *origin = "https://acme.example") {
        std::string why;
        id_ = std::make_unique<Identity>(store_, *parse_origin(origin, &why), policy, mailer_.fn(), clock_);
        if (with_key) {
            SecretKey key{};
            key.fill(7);
            id_->use_secret_key(key);
        }
    }
    // Everything the store holds, as bytes, to search for what must not be stored: data.mdb, or
    // every cell of the PostgreSQL schema.
    std::string stored_bytes() const {
        if (pg_) return pg_->all_bytes();
        std::ifstream f(root_ + "/db/data.mdb", std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    }
    // Registration on and no wait between codes: what most engine tests start from.
    static Policy open_policy() {
        Policy p;
        p.allow_registration = true;
        p.token_resend = 0;
        return p;
    }
    // A registration (or sign-in) by email, exchanged for a cookie session.
    Session sign_in(std::string_view email) {
        EXPECT_TRUE(id_->tokens().request_token(Intent::Register, email, ""));
        auto s = id_->tokens().exchange_from(mailer_.last().token, "198.51.100.1");
        EXPECT_TRUE(s) << s.error().message;
        return s.value();
    }
    Principal principal(const Session &s) { return id_->sessions().authenticate_from(s.token, "c", s.kind).value(); }

    std::string root_;
    std::unique_ptr<PgSchema> pg_;  // the store's schema when the tests run on PostgreSQL
    std::shared_ptr<Store> store_;
    std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
    Mailer mailer_;
    std::unique_ptr<Identity> id_;
};

}  // namespace signin::testing
