#include "tutti/core/user_text.h"

#include <string>

#include "gtest/gtest.h"

namespace tutti {
namespace {

TEST(UserTextTest, ValidUtf8KeepsWellFormedTextAndReplacesTheRest) {
  EXPECT_EQ(ValidUtf8("plain ascii"), "plain ascii");
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("a\xFF" "b"), "a" + fffd + "b");                // never valid
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), fffd + fffd);                      // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), fffd + fffd + fffd);           // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(ValidUtf8("x\xE2\x82"), "x" + fffd + fffd);               // cut short
  EXPECT_EQ(ValidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(UserTextTest, QuotedTextIsCutAtACharacterBoundary) {
  EXPECT_EQ(QuoteUserText("resnet50"), "'resnet50'");
  EXPECT_EQ(QuoteUserText(std::string(10000, 'm'), 4), "'mmmm…' (+9996 bytes)");
  // "é" is two bytes: a cut after 3 bytes would split the second one.
  EXPECT_EQ(QuoteUserText("\xC3\xA9\xC3\xA9\xC3\xA9", 3), "'\xC3\xA9…' (+4 bytes)");
  EXPECT_EQ(QuoteUserText("bad\xFF"), "'bad\xEF\xBF\xBD'");
  EXPECT_EQ(UserText(std::string(300, 'x'), 2), "xx… (+298 bytes)");
  EXPECT_EQ(UserText("INT32"), "INT32");
}

}  // namespace
}  // namespace tutti
