// What an administrator does (admin.hpp): who may read and who may change, the search over the
// user search index with its pages, and every change audited with the administrator's id.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine_fixtures.hpp"
#include "signin/admin.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

class AdminTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.with_mfa = true;
        make(policy);
        admin_ = std::make_unique<Admin>(*id_, id_->tokens());
    }
    void TearDown() override {
        admin_.reset();
        EngineTest::TearDown();
    }
    // A signed-in administrator whose session passed a second factor just now.
    Principal administrator(const std::string &email = "boss@acme.example") {
        Session s = sign_in(email);
        EXPECT_TRUE(id_->set_role("default", email, "admin", true));
        Principal p = principal(s);
        p.session.mfa = true;
        return p;
    }
    std::string id_of(const std::string &email) { return store_->read()->user_by_email("default", email)->id; }
    // The newest audit entry of `kind` about the account `user_id`.
    AuditEntry last(const std::string &kind, const std::string &user_id) {
        for (const auto &e : store_->read()->audit(1000)) {
            if (e.kind == kind && e.user_id == user_id) return e;
        }
        ADD_FAILURE() << "no " << kind << " entry";
        return {};
    }
    std::vector<std::string> emails(const UserPage &page) {
        std::vector<std::string> out;
        for (const auto &u : page.users) out.push_back(u.email);
        return out;
    }
    std::unique_ptr<Admin> admin_;
};

TEST_F(AdminTest, ANonAdministratorIsRefusedEverything) {
    Principal p = principal(sign_in("someone@acme.example"));
    p.session.mfa = true;
    auto page = admin_->search(p, {});
    ASSERT_FALSE(page);
    EXPECT_EQ(page.error().code, Code::Forbidden);
    EXPECT_EQ(admin_->user(p, p.user.id).error().code, Code::Forbidden);
    EXPECT_EQ(admin_->audit(p, {}).error().code, Code::Forbidden);
    EXPECT_EQ(admin_->suspend(p, p.user.id, true).error().code, Code::Forbidden);
    EXPECT_FALSE(store_->read()->user_by_id(p.user.id)->suspended);
}

TEST_F(AdminTest, WithoutAPassedSecondFactorAnAdministratorReadsButCannotChange) {
    Principal p = administrator();
    sign_in("target@acme.example");
    const std::string target = id_of("target@acme.example");
    p.session.mfa = false;
    EXPECT_TRUE(admin_->search(p, {}));
    EXPECT_TRUE(admin_->user(p, target));
    auto st = admin_->suspend(p, target, true);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, Code::FreshSessionRequired);
    EXPECT_EQ(admin_->end_sessions(p, target).error().code, Code::FreshSessionRequired);
    EXPECT_EQ(admin_->reset_mfa(p, target).error().code, Code::FreshSessionRequired);
    EXPECT_EQ(admin_->erase(p, target).error().code, Code::FreshSessionRequired);
    EXPECT_EQ(admin_->set_roles(p, target, {"x"}, {}).error().code, Code::FreshSessionRequired);
    EXPECT_EQ(admin_->invite(p, "new@acme.example", "", {}, false).error().code, Code::FreshSessionRequired);
    // a second factor passed too long ago counts no more
    p.session.mfa = true;
    clock_->advance(id_->policy().fresh_window);
    EXPECT_EQ(admin_->suspend(p, target, true).error().code, Code::FreshSessionRequired);
    EXPECT_FALSE(store_->read()->user_by_id(target)->suspended);
}

TEST_F(AdminTest, SearchByAddressDomainIdRoleAndStateWithPages) {
    Principal p = administrator();
    for (const char *e : {"ann@alpha.example", "andy@alpha.example", "bea@beta.example", "al@beta.example"}) sign_in(e);
    ASSERT_TRUE(id_->set_role("default", "bea@beta.example", "editor", true));
    ASSERT_TRUE(id_->set_suspended("default", "andy@alpha.example", true));

    auto by_prefix = admin_->search(p, UserQuery{"AN", "", "", "", 50});
    ASSERT_TRUE(by_prefix) << by_prefix.error().message;
    EXPECT_EQ(emails(*by_prefix), (std::vector<std::string>{"andy@alpha.example", "ann@alpha.example"}));
    EXPECT_TRUE(by_prefix->next.empty());

    auto by_domain = admin_->search(p, UserQuery{"@beta", "", "", "", 50});
    ASSERT_TRUE(by_domain);
    auto domain = emails(*by_domain);  // in id order: made in the same millisecond, in any order
    std::sort(domain.begin(), domain.end());
    EXPECT_EQ(domain, (std::vector<std::string>{"al@beta.example", "bea@beta.example"}));

    auto by_id = admin_->search(p, UserQuery{id_of("bea@beta.example"), "", "", "", 50});
    ASSERT_TRUE(by_id);
    EXPECT_EQ(emails(*by_id), std::vector<std::string>{"bea@beta.example"});

    auto by_role = admin_->search(p, UserQuery{"", "editor", "", "", 50});
    ASSERT_TRUE(by_role);
    EXPECT_EQ(emails(*by_role), std::vector<std::string>{"bea@beta.example"});

    auto suspended = admin_->search(p, UserQuery{"", "", "suspended", "", 50});
    ASSERT_TRUE(suspended);
    EXPECT_EQ(emails(*suspended), std::vector<std::string>{"andy@alpha.example"});
    auto active_an = admin_->search(p, UserQuery{"an", "", "active", "", 50});
    ASSERT_TRUE(active_an);
    EXPECT_EQ(emails(*active_an), std::vector<std::string>{"ann@alpha.example"});

    // pages of two over the five accounts of "a" and "b" addresses, each one once
    std::vector<std::string> seen;
    UserQuery q{"", "", "active", "", 2};
    for (int i = 0; i < 5; ++i) {
        auto page = admin_->search(p, q);
        ASSERT_TRUE(page) << page.error().message;
        for (const auto &u : page->users) {
            seen.push_back(u.email);
            EXPECT_TRUE(u.password_hash.empty());
        }
        if (page->next.empty()) break;
        q.after = page->next;
    }
    EXPECT_EQ(seen.size(), 4u) << "boss, ann, bea, al: andy is suspended";

    auto wrong = admin_->search(p, UserQuery{"", "editor", "", "sactive", 50});
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Code::InvalidRequest) << "a cursor of another search";
    EXPECT_EQ(admin_->search(p, UserQuery{"", "", "gone", "", 50}).error().code, Code::InvalidRequest);
}

// A narrow filter over a wide prefix answers after a bounded read, with a cursor that goes on.
TEST_F(AdminTest, ASearchReadsABoundedPartOfTheIndexAtATime) {
    Principal p = administrator();
    {
        auto w = store_->write();
        for (std::size_t i = 0; i < Admin::kScanBudget + 10; ++i) {
            User u;
            char id[40];
            std::snprintf(id, sizeof id, "0190a000-0000-7000-8000-%012zu", i);
            u.id = id;
            u.email = "user" + std::to_string(100000 + i) + "@wide.example";
            u.group_id = "default";
            u.suspended = i == Admin::kScanBudget + 5;
            w->put_user(u);
        }
        w->commit();
    }
    UserQuery q{"@wide", "", "suspended", "", 10};
    auto first = admin_->search(p, q);
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_TRUE(first->users.empty());
    ASSERT_FALSE(first->next.empty()) << "the budget ran out before the end";
    q.after = first->next;
    auto second = admin_->search(p, q);
    ASSERT_TRUE(second);
    ASSERT_EQ(second->users.size(), 1u);
    EXPECT_EQ(second->users[0].email, "user" + std::to_string(100000 + Admin::kScanBudget + 5) + "@wide.example");
    EXPECT_TRUE(second->next.empty());
}

TEST_F(AdminTest, EveryChangeIsAuditedWithTheAdministratorsId) {
    Principal p = administrator();
    const std::string by = "admin:" + p.user.id;
    sign_in("target@acme.example");
    sign_in("target@acme.example");
    const std::string target = id_of("target@acme.example");

    ASSERT_TRUE(admin_->suspend(p, target, true));
    EXPECT_TRUE(store_->read()->user_by_id(target)->suspended);
    EXPECT_EQ(last("user.suspended", target).client, by);
    ASSERT_TRUE(admin_->suspend(p, target, false));
    EXPECT_EQ(last("user.restored", target).client, by);

    ASSERT_TRUE(admin_->set_roles(p, target, {"editor", "support"}, {}));
    ASSERT_TRUE(admin_->set_roles(p, target, {}, {"support"}));
    EXPECT_EQ(store_->read()->user_by_id(target)->roles, std::vector<std::string>{"editor"});
    EXPECT_EQ(last("user.role_removed", target).client, by);
    EXPECT_EQ(last("user.role_added", target).client, by);
    EXPECT_EQ(admin_->set_roles(p, target, {"No Role"}, {}).error().code, Code::InvalidRequest);

    ASSERT_EQ(store_->read()->sessions_of(target).size(), 2u);
    ASSERT_TRUE(admin_->end_sessions(p, target));
    EXPECT_TRUE(store_->read()->sessions_of(target).empty());
    EXPECT_EQ(last("session.revoked", target).client, by);

    clock_->advance(1);  // the entries before it are older
    ASSERT_TRUE(admin_->reset_mfa(p, target));
    EXPECT_EQ(last("mfa.reset", target).client, by);

    auto info = admin_->user(p, target);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_TRUE(info->user.password_hash.empty());
    ASSERT_FALSE(info->audit.empty());
    EXPECT_EQ(info->audit.front().kind, "mfa.reset") << "the newest first";

    auto invited = admin_->invite(p, "fresh@acme.example", "", {"editor"}, false);
    ASSERT_TRUE(invited) << invited.error().message;
    EXPECT_EQ(last("user.invited", id_of("fresh@acme.example")).client, by);

    ASSERT_TRUE(admin_->erase(p, target));
    EXPECT_FALSE(store_->read()->user_by_id(target));
    EXPECT_EQ(last("user.deleted", target).client, by);
    EXPECT_EQ(admin_->erase(p, target).error().code, Code::NotFound);

    auto mine = admin_->audit(p, AuditQuery{"user.deleted", "", target, 0, 0, 10});
    ASSERT_TRUE(mine);
    ASSERT_EQ(mine->size(), 1u);
    EXPECT_EQ(mine->at(0).client, by);
}

TEST_F(AdminTest, AnAdministratorCannotLockThemselvesOut) {
    Principal p = administrator();
    EXPECT_EQ(admin_->suspend(p, p.user.id, true).error().code, Code::InvalidRequest);
    EXPECT_EQ(admin_->erase(p, p.user.id).error().code, Code::InvalidRequest);
    EXPECT_EQ(admin_->set_roles(p, p.user.id, {}, {"admin"}).error().code, Code::InvalidRequest);
    EXPECT_TRUE(store_->read()->user_by_id(p.user.id)->roles == std::vector<std::string>{"admin"});
}

}  // namespace

TEST(AuditCsv, QuotesWhatNeedsItAndDisarmsFormulas) {
    std::vector<AuditEntry> entries(2);
    entries[0] = AuditEntry{0, "login.failed", "a@b.example", "=HYPERLINK(\"x\")", "u1", "one, two"};
    entries[1] = AuditEntry{1000, "session.revoked", "-c@d.example", "admin:u2", "u3", "line\nbreak"};
    EXPECT_EQ(audit_csv(entries),
              "at,kind,email,client,user_id,detail\r\n"
              "1970-01-01T00:00:00.000Z,login.failed,a@b.example,\"'=HYPERLINK(\"\"x\"\")\",u1,\"one, two\"\r\n"
              "1970-01-01T00:00:01.000Z,session.revoked,\"'-c@d.example\",admin:u2,u3,\"line\nbreak\"\r\n");
    EXPECT_EQ(audit_csv({}), "at,kind,email,client,user_id,detail\r\n");
}
