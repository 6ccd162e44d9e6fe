// Access rules, people lists and roles (access.hpp), and roles in the store.
#include <gtest/gtest.h>

#include <filesystem>

#include "signin/access.hpp"
#include "signin/auth.hpp"
#include "store/records.hpp"

using namespace signin;

namespace {

User user(std::string email, std::vector<std::string> roles = {}) {
    User u;
    u.id = "u1";
    u.email = std::move(email);
    u.group_id = "default";
    u.roles = std::move(roles);
    return u;
}

AccessRule rule(bool allow, std::string_view form, std::string_view value = {}, std::string_view text = {}) {
    auto r = AccessRules::rule(allow, form, value, text);
    EXPECT_TRUE(r) << form << " " << value << ": " << r.error().message;
    return r ? r.value() : AccessRule{};
}

TEST(AccessRules, EmptyListAllowsEveryone) {
    AccessRules rules;
    EXPECT_TRUE(rules.allows(user("a@b.example")));
}

TEST(AccessRules, EachFormMatchesWhatItNames) {
    EXPECT_TRUE(rule(true, "email", "Alice@Acme.com").matches(user("alice@acme.com")));
    EXPECT_FALSE(rule(true, "email", "alice@acme.com").matches(user("bob@acme.com")));
    EXPECT_TRUE(rule(true, "domain", "ACME.com").matches(user("bob@acme.com")));
    EXPECT_TRUE(rule(true, "domain", "@acme.com").matches(user("bob@acme.com")));
    EXPECT_FALSE(rule(true, "domain", "acme.com").matches(user("bob@sub.acme.com"))) << "exact domain only";
    EXPECT_FALSE(rule(true, "domain", "acme.com").matches(user("bob@notacme.com")));
    EXPECT_TRUE(rule(true, "role", "staff").matches(user("c@x.example", {"admin", "staff"})));
    EXPECT_FALSE(rule(true, "role", "staff").matches(user("c@x.example", {"admin"})));
    EXPECT_TRUE(rule(false, "all").matches(user("d@x.example")));
    AccessRule file = rule(true, "file", "people.txt", "# staff\nalice@acme.com\n@partner.example  # all of them\n\n");
    EXPECT_TRUE(file.matches(user("alice@acme.com")));
    EXPECT_TRUE(file.matches(user("zed@partner.example")));
    EXPECT_FALSE(file.matches(user("bob@acme.com")));
}

TEST(AccessRules, FirstMatchWinsAndAnAllowListDeniesTheRest) {
    AccessRules rules;
    rules.add(rule(false, "email", "mallory@acme.com"));
    rules.add(rule(true, "domain", "acme.com"));
    EXPECT_FALSE(rules.allows(user("mallory@acme.com"))) << "the deny comes first";
    EXPECT_TRUE(rules.allows(user("alice@acme.com")));
    EXPECT_FALSE(rules.allows(user("eve@evil.example"))) << "an allow list ends in deny";

    AccessRules deny_list;
    deny_list.add(rule(false, "domain", "evil.example"));
    EXPECT_TRUE(deny_list.allows(user("alice@acme.com"))) << "a deny list ends in allow";
    EXPECT_FALSE(deny_list.allows(user("eve@evil.example")));

    AccessRules staff;
    staff.add(rule(true, "role", "staff"));
    staff.add(rule(false, "all"));
    EXPECT_TRUE(staff.allows(user("s@x.example", {"staff"})));
    EXPECT_FALSE(staff.allows(user("t@x.example")));
}

TEST(AccessRules, MistakesAreRefusedWithTheReason) {
    EXPECT_FALSE(AccessRules::rule(true, "emial", "a@b.example"));
    EXPECT_FALSE(AccessRules::rule(true, "email", "not-an-address"));
    EXPECT_FALSE(AccessRules::rule(true, "domain", "bad domain"));
    EXPECT_FALSE(AccessRules::rule(true, "role", "Staff!"));
    EXPECT_FALSE(AccessRules::rule(true, "all", "x"));
    EXPECT_FALSE(AccessRules::rule(true, "email", ""));
    auto bad = AccessRules::rule(true, "file", "people.txt", "alice@acme.com\nnot an address\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
}

TEST(Roles, Normalized) {
    EXPECT_EQ(normalize_role("Staff"), "staff");
    EXPECT_EQ(normalize_role("on-call_2"), "on-call_2");
    EXPECT_FALSE(normalize_role(""));
    EXPECT_FALSE(normalize_role(std::string(33, 'a')));
    EXPECT_FALSE(normalize_role("a b"));
}

TEST(Roles, StoredSortedAndReadBackFromOlderRecords) {
    User u = user("r@x.example", {"a", "b"});
    EXPECT_EQ(records::decode_user(records::encode_user(u)).roles, u.roles);
    // a user written before roles existed (format 1) reads back with none, one written before
    // invitations were pending (format 2) as not pending, and one written before the last
    // language was kept (format 3) with none
    User with_lang = user("old@x.example", {"a"});
    with_lang.lang = "pt-BR";
    EXPECT_EQ(records::decode_user(records::encode_user(with_lang)).lang, "pt-BR");
    User pinned = user("old@x.example", {"a"});
    pinned.api_version = "2024-06-01";
    EXPECT_EQ(records::decode_user(records::encode_user(pinned)).api_version, "2024-06-01");
    // one written before API versions were pinned (format 4) reads back with no pin
    std::string v5 = records::encode_user(with_lang);
    std::string v4 = v5.substr(0, v5.size() - 4);  // without the empty pin
    v4[0] = 4;
    EXPECT_EQ(records::decode_user(v4).lang, "pt-BR");
    EXPECT_EQ(records::decode_user(v4).api_version, "");
    v4 = records::encode_user(user("old@x.example", {"a"}));
    v4 = v4.substr(0, v4.size() - 4);
    std::string v3 = v4.substr(0, v4.size() - 4);  // without the empty language
    v3[0] = 3;
    EXPECT_EQ(records::decode_user(v3).roles, std::vector<std::string>{"a"});
    EXPECT_EQ(records::decode_user(v3).lang, "");
    std::string v2 = v3.substr(0, v3.size() - 1);
    v2[0] = 2;
    EXPECT_EQ(records::decode_user(v2).roles, std::vector<std::string>{"a"});
    EXPECT_FALSE(records::decode_user(v2).pending);
    std::string plain = records::encode_user(user("old@x.example"));
    std::string v1 = plain.substr(0, plain.size() - 10);
    v1[0] = 1;
    EXPECT_TRUE(records::decode_user(v1).roles.empty());
    std::string unsorted = records::encode_user(user("u@x.example", {"b", "a"}));
    EXPECT_THROW(records::decode_user(unsorted), StoreError);
}

TEST(Roles, GivenAndTakenByTheAdministration) {
    char tmpl[] = "/tmp/signin-roles-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    {
        LmdbOptions o;
        o.path = std::string(tmpl) + "/db";
        o.map_size = 1ull << 24;
        std::shared_ptr<Store> store(open_lmdb_store(o));
        std::string why;
        Identity id(store, *parse_origin("http://127.0.0.1:8080", &why), Policy{});
        User u = user("ro@x.example");
        {
            auto txn = store->write();
            txn->put_user(u);
            txn->commit();
        }
        EXPECT_TRUE(id.set_role("", "ro@x.example", "staff", true));
        EXPECT_TRUE(id.set_role("", "ro@x.example", "admin", true));
        EXPECT_TRUE(id.set_role("", "ro@x.example", "staff", true)) << "adding a held role changes nothing";
        EXPECT_EQ(store->read()->user_by_id("u1")->roles, (std::vector<std::string>{"admin", "staff"}));
        EXPECT_TRUE(id.set_role("", "ro@x.example", "admin", false));
        EXPECT_EQ(store->read()->user_by_id("u1")->roles, (std::vector<std::string>{"staff"}));
        EXPECT_FALSE(id.set_role("", "nobody@x.example", "staff", true));
        EXPECT_FALSE(id.set_role("", "ro@x.example", "Bad Role", true));
        bool audited = false;  // (entries of one millisecond come in any order)
        for (const auto &e : store->read()->audit(100)) audited = audited || e.kind == "user.role_removed";
        EXPECT_TRUE(audited);
    }
    std::filesystem::remove_all(tmpl);
}

}  // namespace

namespace {

TEST(WhoMayJoin, AnAddressOutsideGetsTheSameAnswerAndNothingElse) {
    char tmpl[] = "/tmp/signin-join-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    {
        LmdbOptions o;
        o.path = std::string(tmpl) + "/db";
        o.map_size = 1ull << 24;
        std::shared_ptr<Store> store(open_lmdb_store(o));
        std::string why;
        auto people = People::parse("@acme.com\nguest@elsewhere.example\n", &why);
        ASSERT_TRUE(people) << why;
        Policy policy;
        policy.allow_registration = true;
        policy.may_join = std::make_shared<const People>(*people);
        std::vector<Delivery> sent;
        Identity id(store, *parse_origin("http://127.0.0.1:8080", &why), policy, [&](const Delivery &d) -> Status {
            sent.push_back(d);
            return ok_status();
        });
        EXPECT_TRUE(id.tokens().request_token(Intent::Register, "outsider@evil.example", ""));
        EXPECT_TRUE(sent.empty()) << "no email outside who may join";
        EXPECT_TRUE(store->read()->tokens_for("default", "outsider@evil.example").empty());
        EXPECT_TRUE(id.tokens().request_token(Intent::Register, "new@acme.com", ""));
        EXPECT_TRUE(id.tokens().request_token(Intent::Register, "guest@elsewhere.example", ""));
        ASSERT_EQ(sent.size(), 2u);
        EXPECT_EQ(sent[0].purpose, Purpose::Registration);
        // an account that exists (made by an administrator) is told it exists, wherever it is
        User u;
        u.id = "u-old";
        u.email = "old@evil.example";
        u.group_id = "default";
        {
            auto txn = store->write();
            txn->put_user(u);
            txn->commit();
        }
        EXPECT_TRUE(id.tokens().request_token(Intent::Register, "old@evil.example", ""));
        ASSERT_EQ(sent.size(), 3u);
        EXPECT_EQ(sent[2].purpose, Purpose::AlreadyRegistered);
        bool audited = false;  // (entries of one millisecond come in any order)
        for (const auto &e : store->read()->audit(100)) {
            audited = audited || (e.email == "outsider@evil.example" && e.detail == "register:not_allowed");
        }
        EXPECT_TRUE(audited) << "the audit trail says why";
    }
    std::filesystem::remove_all(tmpl);
}

}  // namespace

namespace {

TEST(ReturnTo, OnlyPathsOfThisSite) {
    for (const char *ok : {"/", "/app/", "/app/x?y=1&z=%2F", "/a//b", "/%2F%2Fevil.example"}) {
        EXPECT_TRUE(is_same_origin_path(ok)) << ok;
    }
    for (const char *bad : {"", "app", "//evil.example", "/\\evil.example", "\\\\evil.example", "https://evil.example",
                            "javascript:alert(1)", "/a b", "/a\tb", "/a\nb", "/a\rb", "/x\\y", " /app",
                            "http:/evil.example", "/\x7f"}) {
        EXPECT_FALSE(is_same_origin_path(bad)) << bad;
    }
    EXPECT_FALSE(is_same_origin_path(std::string("/a\0b", 4)));
}

}  // namespace
