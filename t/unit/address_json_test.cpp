// Address, group and origin validation, strict JSON request bodies and the JSON answers.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "signin/json.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

struct EmailCase {
    std::string in;
    std::optional<std::string> out;  // nullopt: refused
};

using JsonPtr = std::unique_ptr<cJSON, void (*)(cJSON *)>;
JsonPtr parse_json(const std::string &text) { return JsonPtr(cJSON_Parse(text.c_str()), cJSON_Delete); }

std::string str_field(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(v)) return "<missing or not a string: " + std::string(name) + ">";
    return v->valuestring;
}

Result<json::Fields> parse_login(std::string_view body, std::size_t max = 1024) {
    return json::parse_object(body, {{"email", true}, {"group", false}}, max);
}

}  // namespace

// ---------------------------------------------------------------- normalize_email

TEST(Address, NormalizeEmailTable) {
    const std::string local64(64, 'a'), local65(65, 'a');
    const std::vector<EmailCase> cases = {
        {"a@b.co", "a@b.co"},
        {"Alice.Smith+tag@Example.COM", "alice.smith+tag@example.com"},
        {"USER@EXAMPLE.ORG", "user@example.org"},
        {"o'neil_x-y@sub.example.com", "o'neil_x-y@sub.example.com"},
        {local64 + "@x.com", local64 + "@x.com"},          // 64 is the longest local part
        {"a@example.xn--p1ai", "a@example.xn--p1ai"},       // IDN A-label TLD
        {"a@xn--bcher-kva.example", "a@xn--bcher-kva.example"},
        {"ab.example.com", std::nullopt},                   // no @
        {"a@b@example.com", std::nullopt},                  // two @
        {"a b@example.com", std::nullopt},                  // space inside
        {" a@example.com", std::nullopt},                   // leading space
        {"a@example.com ", std::nullopt},                   // trailing space
        {"a..b@x.com", std::nullopt},                       // consecutive dots
        {".a@x.com", std::nullopt},                         // leading dot
        {"a.@x.com", std::nullopt},                         // trailing dot of the local part
        {"a@localhost", std::nullopt},                      // no dot in the domain
        {local65 + "@x.com", std::nullopt},                 // 65-char local part
        {"\xc3\xbc@x.com", std::nullopt},                   // non-ASCII local part
        {"a@b\xc3\xbc" "cher.de", std::nullopt},            // non-ASCII domain (U-label)
        {"a@x..com", std::nullopt},
        {"a@x.com.", std::nullopt},
        {"a@-x.com", std::nullopt},
        {"a@x-.com", std::nullopt},
        {"a@x.c0m", std::nullopt},                          // numeric TLD that is no A-label
        {"a@127.0.0.1", std::nullopt},
        {"", std::nullopt},
        {"@x.com", std::nullopt},
        {"a@", std::nullopt},
        {"a\"b@x.com", std::nullopt},
        {"a@x.com\n", std::nullopt},
        {std::string("a\0b@x.com", 9), std::nullopt},
        {"a@" + std::string(250, 'b') + ".com", std::nullopt},  // longer than 254
    };
    for (const auto &c : cases) {
        auto got = normalize_email(c.in);
        EXPECT_EQ(got, c.out) << "input: \"" << c.in << "\"";
    }
}

TEST(Address, NormalizeGroup) {
    EXPECT_EQ(normalize_group(""), std::optional<std::string>("default"));
    EXPECT_EQ(normalize_group("Team1"), std::optional<std::string>("team1"));
    EXPECT_EQ(normalize_group("a.b_c-d"), std::optional<std::string>("a.b_c-d"));
    EXPECT_EQ(normalize_group(std::string(64, 'g')), std::optional<std::string>(std::string(64, 'g')));
    EXPECT_FALSE(normalize_group(std::string(65, 'g')));
    EXPECT_FALSE(normalize_group("-a"));
    EXPECT_FALSE(normalize_group(".a"));
    EXPECT_FALSE(normalize_group("_a"));
    EXPECT_FALSE(normalize_group("a b"));
    EXPECT_FALSE(normalize_group("a/b"));
    EXPECT_FALSE(normalize_group("\xc3\xbc"));
}

// ---------------------------------------------------------------- parse_origin

TEST(Origin, RefusesNonLoopbackHttpPathsAndJunk) {
    const std::vector<std::string> bad = {
        "http://example.com",
        "http://app.example.com:8080",
        "http://127.0.0.1.example.com",
        "http://128.0.0.1",
        "https://app.example.com/path",
        "https://app.example.com/a/",
        "https://app.example.com?x=1",
        "https://app.example.com#frag",
        "https://user@app.example.com",
        "https://app example.com",
        "https://app.example.com:abc",
        "https://app.example.com:",
        "https://:443",
        "https://",
        "app.example.com",
        "ftp://app.example.com",
        "",
        "junk",
    };
    for (const auto &t : bad) {
        std::string why;
        EXPECT_FALSE(parse_origin(t, &why)) << t;
        EXPECT_FALSE(why.empty()) << "no reason given for " << t;
    }
    EXPECT_FALSE(parse_origin("http://example.com", nullptr));  // why may be null
}

TEST(Origin, TheHostIsADnsNameAnIpv4OrABracketedIpv6) {
    // found by fuzz/fuzz_address: a colon and non-ASCII bytes inside the host were accepted,
    // and the normalized origin no longer parsed
    const std::vector<std::string> bad = {
        "https://::443",
        "https://a:4.bbb:443",
        "https://app\x01.example.com",
        "https://app\x7f.example.com",
        "https://caf\xc3\xa9.example.com",
        "https://app_x.example.com",
        "https://app..example.com",
        "https://.example.com",
        "https://-app.example.com",
        "https://app-.example.com",
        "https://[::1",
        "https://[1:2:3:4:5:6:7:8:9]",
        "https://[1::2::3]",
        "https://[12345::1]",
        "https://[g::1]",
        "https://" + std::string(64, 'a') + ".example.com",
    };
    for (const auto &t : bad) {
        std::string why;
        EXPECT_FALSE(parse_origin(t, &why)) << t;
        EXPECT_FALSE(why.empty()) << "no reason given for " << t;
    }
    for (const char *good : {"https://app.example.com", "https://xn--caf-dma.example.com", "https://10.0.0.1:8443",
                             "https://[2001:db8::1]", "http://[::1]:8080", "https://a-b.c-d.example"}) {
        std::string why;
        auto o = parse_origin(good, &why);
        ASSERT_TRUE(o) << good << ": " << why;
        auto again = parse_origin(o->text, &why);  // what it normalizes to parses to itself
        ASSERT_TRUE(again) << o->text;
        EXPECT_EQ(again->text, o->text);
    }
}

TEST(Origin, RefusesPortOutOfRange) {
    std::string why;
    EXPECT_FALSE(parse_origin("https://app.example.com:99999", &why));
    EXPECT_FALSE(parse_origin("https://app.example.com:65536", &why));
    EXPECT_FALSE(parse_origin("https://app.example.com:0", &why));
    auto ok = parse_origin("https://app.example.com:65535", &why);
    ASSERT_TRUE(ok) << why;
    EXPECT_EQ(ok->text, "https://app.example.com:65535");
    // leading zeros are dropped, as in the Origin a browser sends
    ok = parse_origin("https://app.example.com:0443", &why);
    ASSERT_TRUE(ok) << why;
    EXPECT_EQ(ok->text, "https://app.example.com");
    ok = parse_origin("http://127.0.0.1:08080", &why);
    ASSERT_TRUE(ok) << why;
    EXPECT_EQ(ok->text, "http://127.0.0.1:8080");
}

TEST(Origin, Normalizes) {
    std::string why;
    auto o = parse_origin("https://App.Example.com:443/", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "https://app.example.com");
    EXPECT_TRUE(o->https);
    EXPECT_FALSE(o->loopback);

    o = parse_origin("HTTPS://APP.EXAMPLE.COM:8443", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "https://app.example.com:8443");

    o = parse_origin("http://127.0.0.1:8080", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "http://127.0.0.1:8080");
    EXPECT_FALSE(o->https);
    EXPECT_TRUE(o->loopback);

    o = parse_origin("http://LocalHost:80/", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "http://localhost");
    EXPECT_TRUE(o->loopback);

    o = parse_origin("http://[::1]:3000", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "http://[::1]:3000");
    EXPECT_TRUE(o->loopback);

    // https on a loopback host keeps its port (443 is only the default of https)
    o = parse_origin("https://127.0.0.1:80", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->text, "https://127.0.0.1:80");
}

// ---------------------------------------------------------------- json::parse_object

TEST(Json, AcceptsAFlatObjectWithWhitespace) {
    auto r = parse_login(" \r\n\t{ \"email\" : \"a@b.co\" ,\n \"group\":\"t\" } \n\t");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->at("email"), "a@b.co");
    EXPECT_EQ(r->at("group"), "t");

    auto only_required = parse_login(R"({"email":"x"})");
    ASSERT_TRUE(only_required);
    EXPECT_EQ(only_required->count("group"), 0u);

    auto utf8 = parse_login("{\"email\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\u00e9\"}");
    ASSERT_TRUE(utf8) << utf8.error().message;
    EXPECT_EQ(utf8->at("email"), "caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9");
}

TEST(Json, RefusesInvalidUtf8) {
    const std::vector<std::string> bodies = {
        "{\"email\":\"\xc0\xaf\"}",              // overlong 2-byte
        "{\"email\":\"\xe0\x80\xaf\"}",          // overlong 3-byte
        "{\"email\":\"\xf0\x80\x80\xaf\"}",      // overlong 4-byte
        "{\"email\":\"\xed\xa0\x80\"}",          // UTF-16 surrogate
        "{\"email\":\"\xe2\x82\"}",              // truncated sequence
        "{\"email\":\"a\"}\xe2\x82",             // truncated at the very end
        "{\"email\":\"\x80\"}",                  // stray continuation byte
        "{\"email\":\"\xf4\x90\x80\x80\"}",      // beyond U+10FFFF
        "{\"email\":\"\xff\"}",
    };
    for (const auto &b : bodies) {
        auto r = parse_login(b);
        EXPECT_FALSE(r);
        if (!r) {
            EXPECT_EQ(r.error().code, Code::InvalidRequest);
        }
    }
    EXPECT_TRUE(json::valid_utf8("plain ascii \xc3\xa9 \xef\xbf\xbd \xf4\x8f\xbf\xbf"));
}

TEST(Json, RefusesMalformedAndWrongShapes) {
    struct Case {
        std::string body;
        const char *why;
    };
    const std::vector<Case> cases = {
        {"", "empty"},
        {"{", "unterminated"},
        {R"({"email":"a")", "unterminated object"},
        {R"({"email":"a",})", "trailing comma"},
        {R"({email:"a"})", "unquoted key"},
        {R"({'email':'a'})", "single quotes"},
        {R"({"email":"a"} x)", "trailing garbage"},
        {R"({"email":"a"}{})", "two values"},
        {R"({"email":"a"})" + std::string(1, '\0'), "trailing NUL byte"},
        {R"(["a"])", "array"},
        {R"("a@b.co")", "string"},
        {"null", "null"},
        {"42", "number"},
        {R"({"email":"a","extra":"b"})", "unknown field"},
        {R"({"email":"a","email":"b"})", "duplicate field"},
        {R"({"email":1})", "number value"},
        {R"({"email":true})", "bool value"},
        {R"({"email":null})", "null value"},
        {R"({"email":["a"]})", "array value"},
        {R"({"email":{"a":"b"}})", "object value"},
        {R"({"group":"g"})", "missing required"},
        {R"({})", "empty object, required missing"},
        {R"({"email":"a\u0000b"})", "escaped NUL"},
        {R"({"email":"\u0000"})", "only an escaped NUL"},
        // raw control bytes: never valid in a JSON string; a raw NUL ended the C string cJSON gave
        {std::string(R"({"email":"alice@example.com)") + '\0' + R"(.evil.org"})", "raw NUL in a string"},
        {std::string(R"({"email":")") + '\0' + R"("})", "only a raw NUL"},
        {std::string(R"({"email":"a)") + '\x01' + R"(b"})", "raw control byte in a string"},
        {std::string("{") + '\0' + R"("email":"a"})", "raw NUL between tokens"},
    };
    for (const auto &c : cases) {
        auto r = parse_login(c.body);
        EXPECT_FALSE(r) << c.why;
        if (!r) {
            EXPECT_EQ(r.error().code, Code::InvalidRequest) << c.why;
            EXPECT_FALSE(r.error().message.empty()) << c.why;
        }
    }
}

TEST(Json, OnlyJsonWhitespaceMayBeARawControlByte) {
    EXPECT_TRUE(json::free_of_raw_controls("{\t\"a\":\r\n\"b\" }"));
    EXPECT_FALSE(json::free_of_raw_controls(std::string("a\0b", 3)));
    EXPECT_FALSE(json::free_of_raw_controls("a\x1f"));
    EXPECT_TRUE(json::free_of_raw_controls("\x7f\xc3\xa9"));
}

TEST(Json, StringLengthLimit) {
    EXPECT_TRUE(parse_login("{\"email\":\"" + std::string(1024, 'a') + "\"}"));
    EXPECT_FALSE(parse_login("{\"email\":\"" + std::string(1025, 'a') + "\"}"));
    EXPECT_FALSE(parse_login("{\"email\":\"" + std::string(11, 'a') + "\"}", 10));
    EXPECT_TRUE(parse_login("{\"email\":\"" + std::string(10, 'a') + "\"}", 10));
}

// An escaped backslash followed by the text u0000 is no NUL: it must not be refused as one.
TEST(Json, EscapedBackslashBeforeU0000IsNotANul) {
    auto r = parse_login(R"({"email":"a\\u0000"})");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->at("email"), "a\\u0000");
    // but an odd run of backslashes still ends in a real \u0000 escape
    EXPECT_FALSE(parse_login(R"({"email":"a\\\u0000"})"));
}

// ---------------------------------------------------------------- json answers

TEST(JsonWriter, UserParsesBackWithTheSpecFields) {
    User u;
    u.id = "0190f2a4-1b2c-7d3e-8f40-123456789abc";
    u.email = "a\"<b>@example.com";
    u.group_id = "default";
    u.created_at = 1795000000123;
    u.updated_at = 1795000001000;
    u.password_hash = "$argon2id$v=19$secret";
    std::string text = json::user(u);
    auto root = parse_json(text);
    ASSERT_TRUE(root) << text;
    EXPECT_EQ(str_field(root.get(), "id"), u.id);
    EXPECT_EQ(str_field(root.get(), "email"), u.email);
    EXPECT_EQ(str_field(root.get(), "group_id"), "default");
    EXPECT_EQ(str_field(root.get(), "created_at"), "2026-11-18T11:06:40.123Z");
    EXPECT_EQ(str_field(root.get(), "updated_at"), "2026-11-18T11:06:41.000Z");
    EXPECT_EQ(cJSON_GetArraySize(root.get()), 5);  // nothing more: no suspended, no password hash
    EXPECT_EQ(text.find("argon2"), std::string::npos);
}

TEST(JsonWriter, ErrorEscapesQuotesAndAngleBrackets) {
    const std::string msg = "say \"hi\" <script>alert(1)</script> & \\ \n\x01";
    std::string text = json::error(Code::InvalidEmail, msg);
    EXPECT_EQ(text.find('<'), std::string::npos) << text;
    EXPECT_EQ(text.find('>'), std::string::npos) << text;
    EXPECT_NE(text.find("\\\"hi\\\""), std::string::npos) << text;
    EXPECT_NE(text.find("\\u003c"), std::string::npos) << text;
    EXPECT_NE(text.find("\\u003e"), std::string::npos) << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    auto root = parse_json(text);
    ASSERT_TRUE(root) << text;
    EXPECT_EQ(str_field(root.get(), "error"), msg);
    EXPECT_EQ(str_field(root.get(), "code"), "invalid_email");
    EXPECT_EQ(cJSON_GetArraySize(root.get()), 2);
}

// Every ASCII byte: escaped exactly when it is a control character, '"', '\\', '<', '>', '&' or
// DEL (the table of append_escaped), and read back as itself.
TEST(JsonWriter, EscapesEachAsciiByteByTheTable) {
    std::string empty = "x";
    json::append_escaped(empty, "");
    EXPECT_EQ(empty, "x\"\"");
    std::string mixed;
    json::append_escaped(mixed, "plain run, then <b> & \"q\" and a tab\tend");
    EXPECT_EQ(mixed, "\"plain run, then \\u003cb\\u003e \\u0026 \\\"q\\\" and a tab\\tend\"");
    for (int b = 1; b < 128; ++b) {
        const std::string one(1, static_cast<char>(b));
        std::string text;
        json::append_escaped(text, one);
        const bool special = b < 0x20 || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' || b == 0x7f;
        if (b == '"' || b == '\\') {
            EXPECT_EQ(text, std::string("\"\\") + one + "\"") << b;
        } else if (special) {
            EXPECT_EQ(text.find(one), std::string::npos) << b << " " << text;  // the raw byte never appears
            EXPECT_EQ(text[1], '\\') << b;
        } else {
            EXPECT_EQ(text, "\"" + one + "\"") << b;
        }
        json::Writer w;
        w.begin_object().key("v").value("a" + one + "z").end_object();
        auto root = parse_json(w.str());
        ASSERT_TRUE(root) << b << " " << w.str();
        EXPECT_EQ(str_field(root.get(), "v"), "a" + one + "z") << b;
    }
}

TEST(JsonWriter, SessionsParseBack) {
    std::vector<SessionInfo> list(2);
    list[0].id = "s-1";
    list[0].created_at = 1795000000000;
    list[0].last_seen_at = 1795000060000;
    list[0].expires_at = 1797592000000;
    list[0].client = "203.0.113.9";
    list[0].user_agent = "curl/8 \"quoted\"";
    list[0].kind = SessionKind::Cookie;
    list[0].current = true;
    list[0].fresh = true;
    list[1].id = "s-2";
    list[1].kind = SessionKind::Bearer;
    std::string text = json::sessions(list);
    auto root = parse_json(text);
    ASSERT_TRUE(root) << text;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root.get(), "sessions");
    ASSERT_TRUE(cJSON_IsArray(arr)) << text;
    ASSERT_EQ(cJSON_GetArraySize(arr), 2);
    const cJSON *a = cJSON_GetArrayItem(arr, 0);
    EXPECT_EQ(str_field(a, "id"), "s-1");
    EXPECT_EQ(str_field(a, "created_at"), "2026-11-18T11:06:40.000Z");
    EXPECT_EQ(str_field(a, "last_seen_at"), "2026-11-18T11:07:40.000Z");
    EXPECT_FALSE(str_field(a, "expires_at").empty());
    EXPECT_EQ(str_field(a, "client"), "203.0.113.9");
    EXPECT_EQ(str_field(a, "user_agent"), "curl/8 \"quoted\"");
    EXPECT_EQ(str_field(a, "kind"), "cookie");
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "current")));
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "fresh")));
    EXPECT_EQ(cJSON_GetArraySize(a), 9);  // the fields of a session list entry
    const cJSON *b = cJSON_GetArrayItem(arr, 1);
    EXPECT_EQ(str_field(b, "id"), "s-2");
    EXPECT_EQ(str_field(b, "kind"), "bearer");
    EXPECT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "current")));
    EXPECT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "fresh")));

    auto empty = parse_json(json::sessions({}));
    ASSERT_TRUE(empty);
    EXPECT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(empty.get(), "sessions")), 0);
}

TEST(JsonWriter, BearerAnswer) {
    Session s;
    s.user.id = "u-1";
    s.user.email = "a@b.co";
    s.user.group_id = "default";
    s.token = Secret("tok_" + std::string(39, 'x'));
    s.expires_at = 1795003600000;
    s.kind = SessionKind::Bearer;
    auto root = parse_json(json::bearer(s, 1795000000000));
    ASSERT_TRUE(root);
    EXPECT_EQ(str_field(root.get(), "access_token"), std::string(s.token.reveal()));
    EXPECT_EQ(str_field(root.get(), "token_type"), "Bearer");
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(root.get(), "expires_in");
    ASSERT_TRUE(cJSON_IsNumber(exp));
    EXPECT_EQ(exp->valueint, 3600);
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(root.get(), "user");
    ASSERT_TRUE(cJSON_IsObject(user));
    EXPECT_EQ(str_field(user, "email"), "a@b.co");
}

TEST(JsonWriter, NestedSeparators) {
    json::Writer w;
    w.begin_object()
        .key("a").begin_array().value(std::int64_t{1}).value(true).null().begin_object().end_object().end_array()
        .key("b").value("x")
        .end_object();
    EXPECT_EQ(w.str(), R"({"a":[1,true,null,{}],"b":"x"})");
}

TEST(Json, FieldsWipeWhatAMoveLeavesBehind) {
    auto parsed = json::parse_object(R"({"password":"hunter2 s3cret"})", {{"password", true}});
    ASSERT_TRUE(parsed);
    std::string &v = parsed.value()["password"];
    std::string out = std::move(v);  // what the glue does: the value moves into a Secret
    EXPECT_EQ(out, "hunter2 s3cret");
    // a short string's inline buffer keeps the bytes after the move (residue in freed memory)...
    std::string before(v.data(), v.capacity());
    ASSERT_NE(before.find("unter2"), std::string::npos) << "no residue to wipe: the test proves nothing";
    parsed.value().wipe();  // what the destructor does
    std::string after(v.data(), v.capacity());
    EXPECT_EQ(after.find("unter2"), std::string::npos);
    EXPECT_EQ(after, std::string(after.size(), '\0'));
}

TEST(Json, AnUnknownFieldsNameIsQuotedWithoutCuttingACharacter) {
    // 39 ASCII bytes then a 2-byte character: the 40-byte quote must not end inside it
    std::string name(39, 'a');
    name += "\xc3\xa9tail";
    auto f = json::parse_object("{\"" + name + "\":\"x\"}", {{"email", true}});
    ASSERT_FALSE(f);
    EXPECT_TRUE(json::valid_utf8(f.error().message)) << f.error().message;
    EXPECT_NE(f.error().message.find(std::string(39, 'a')), std::string::npos);
}

TEST(JsonFields, ListsOfStrings) {
    const std::initializer_list<json::Field> fields = {{"add", false, false, true}, {"send", false, true}};
    auto f = json::parse_object(R"({"add":["ops","support",""],"send":true})", fields);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(json::list_items(f.value()["add"]), (std::vector<std::string>{"ops", "support", ""}));
    f = json::parse_object(R"({"add":[]})", fields);
    ASSERT_TRUE(f);
    EXPECT_TRUE(json::list_items(f.value()["add"]).empty());
    for (const char *bad : {R"({"add":"ops"})", R"({"add":[1]})", R"({"add":[["ops"]]})", R"({"add":null})"}) {
        EXPECT_FALSE(json::parse_object(bad, fields)) << bad;
    }
    std::string many = R"({"add":[)";
    for (std::size_t i = 0; i <= json::kMaxListItems; ++i) many += std::string(i ? "," : "") + "\"r\"";
    EXPECT_FALSE(json::parse_object(many + "]}", fields));
}
