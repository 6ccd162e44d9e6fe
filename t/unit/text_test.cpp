// The core's shared ASCII helpers (src/core/text.hpp) and the SMTP relay's reply lines as the
// sender keeps them (src/core/smtp_reply.hpp).
#include <gtest/gtest.h>

#include <string>

#include "core/smtp_reply.hpp"
#include "core/text.hpp"

using namespace signin;

TEST(Text, LowerAndUpperTouchOnlyAsciiLetters) {
    EXPECT_EQ(text::lower('A'), 'a');
    EXPECT_EQ(text::lower('Z'), 'z');
    EXPECT_EQ(text::lower('@'), '@') << "the byte before 'A'";
    EXPECT_EQ(text::lower('['), '[') << "the byte after 'Z'";
    EXPECT_EQ(text::upper('a'), 'A');
    EXPECT_EQ(text::upper('{'), '{');
    EXPECT_EQ(text::lowered("SMTP://Relay.Example:587"), "smtp://relay.example:587");
    // UTF-8 bytes are left as they are, whatever a locale thinks of them
    EXPECT_EQ(text::lowered("\xc3\x89T\xc3\xa9"), "\xc3\x89t\xc3\xa9");
}

TEST(Text, EqualsLowercaseIgnoresOnlyTheCaseOfAsciiLetters) {
    EXPECT_TRUE(text::equals_lowercase("Bearer ", "bearer "));
    EXPECT_TRUE(text::equals_lowercase("SMTPUTF8", "smtputf8"));
    EXPECT_TRUE(text::equals_lowercase("", ""));
    EXPECT_FALSE(text::equals_lowercase("Bearer", "bearer "));
    EXPECT_FALSE(text::equals_lowercase("Bearer_", "bearer "));
    EXPECT_FALSE(text::equals_lowercase("@", "`")) << "no case folding beyond the letters";
}

TEST(Text, AsciiAndControlCharacters) {
    EXPECT_TRUE(text::is_ascii(""));
    EXPECT_TRUE(text::is_ascii(std::string("a\0~\x7f", 4)));
    EXPECT_FALSE(text::is_ascii("caf\xc3\xa9"));
    EXPECT_FALSE(text::is_ascii("\x80"));
    EXPECT_FALSE(text::has_control("plain text ~"));
    EXPECT_TRUE(text::has_control("a\nb"));
    EXPECT_TRUE(text::has_control("tab\t"));
    EXPECT_TRUE(text::has_control(std::string("\0", 1)));
    EXPECT_TRUE(text::has_control("\x7f"));
    EXPECT_FALSE(text::has_control("\xc3\xa9")) << "UTF-8 is not control";
}

TEST(Text, TrimTakesTheBlanksGivenFromBothEnds) {
    EXPECT_EQ(text::trim(" \tvalue \t"), "value");
    EXPECT_EQ(text::trim("  a b  "), "a b") << "inner blanks stay";
    EXPECT_EQ(text::trim("value\r"), "value\r") << "by default only spaces and tabs";
    EXPECT_EQ(text::trim("\r value\r\n", " \t\r\n"), "value");
    EXPECT_EQ(text::trim(" \t "), "");
    EXPECT_EQ(text::trim(""), "");
}

TEST(SmtpReplies, AMultiLineReplyIsJoinedAndEndsAtItsLastLine) {
    smtp::ReplyReader r;
    r.begin();
    r.line("451-4.7.1 greylisted,\r\n");
    EXPECT_TRUE(r.in_reply());
    EXPECT_EQ(r.code(), 0) << "not complete yet";
    r.line("451 4.7.1 try again later\r\n");
    EXPECT_FALSE(r.in_reply());
    EXPECT_EQ(r.code(), 451);
    EXPECT_EQ(r.text(), "4.7.1 greylisted, 4.7.1 try again later");
    r.line("250 OK\n");
    EXPECT_EQ(r.code(), 250);
    EXPECT_EQ(r.text(), "OK") << "a new reply replaces the last one's text";
    r.line("not a reply line");
    r.line("25");
    EXPECT_EQ(r.code(), 250) << "lines without a code are ignored";
    r.line("221 bye");
    EXPECT_EQ(r.code(), 250) << "QUIT's answer does not hide the reply that counted";
    r.line("550");
    EXPECT_EQ(r.code(), 550) << "a code alone is a reply";
    EXPECT_EQ(r.text(), "");
}

TEST(SmtpReplies, EhloCapabilitiesHoldForTheConnection) {
    smtp::ReplyReader r;
    r.begin();
    EXPECT_FALSE(r.capabilities_known());
    r.line("220 relay.example ESMTP\r\n");
    r.line("250-relay.example\r\n");
    r.line("250-smtputf8\r\n");
    EXPECT_FALSE(r.capabilities_known()) << "the reply goes on";
    r.line("250 STARTTLS\r\n");
    EXPECT_TRUE(r.capabilities_known());
    EXPECT_TRUE(r.smtputf8()) << "keywords in any case";
    r.begin();
    EXPECT_TRUE(r.smtputf8()) << "a new transfer on the same connection keeps them";
    r.line("250 SMTPUTF8 later\r\n");
    r.line("354 go ahead\r\n");
    EXPECT_TRUE(r.data_accepted());
    // STARTTLS's go-ahead: what the EHLO after it says replaces what was offered in clear
    r.line("220 go ahead\r\n");
    EXPECT_FALSE(r.capabilities_known());
    EXPECT_FALSE(r.smtputf8());
    r.line("250-relay.example\r\n");
    r.line("250 SMTPUTF8X\r\n");
    EXPECT_TRUE(r.capabilities_known());
    EXPECT_FALSE(r.smtputf8()) << "only the whole keyword";
    r.begin();
    EXPECT_FALSE(r.data_accepted());
}

TEST(SmtpReplies, WhatIsKeptOfAnEndlessReplyStaysBounded) {
    smtp::ReplyReader r;
    r.begin();
    const std::string line = "250-" + std::string(700, 'x') + "\r\n";
    for (int i = 0; i < 10000; ++i) r.line(line);
    EXPECT_LE(r.text().size(), smtp::ReplyReader::kMaxText);
    EXPECT_GE(r.text().size(), 700u);
    r.line("250 done\r\n");
    EXPECT_EQ(r.code(), 250);
    EXPECT_LE(r.text().size(), smtp::ReplyReader::kMaxText);
}

TEST(SmtpReplies, PrintableKeepsAShortLineOfPrintableAscii) {
    EXPECT_EQ(smtp::printable("5.1.1 <bob@example.com>: unknown"), "5.1.1 <bob@example.com>: unknown");
    EXPECT_EQ(smtp::printable("a\r\n\x01\xff" "b\t"), "a b");
    EXPECT_EQ(smtp::printable(std::string(300, 'y'), 10), std::string(10, 'y') + "...");
    EXPECT_EQ(smtp::printable("\x1b[31m"), "[31m") << "no terminal escapes reach a log";
}
