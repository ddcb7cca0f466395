#include "messages/utf8.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(utf8, well_formed_text_is_utf8) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain ascii"));
  EXPECT_TRUE(is_utf8("gr\xC3\xBC\xC3\x9F"));         // U+00FC U+00DF
  EXPECT_TRUE(is_utf8("\xE2\x82\xAC"));               // U+20AC
  EXPECT_TRUE(is_utf8("\xF0\x9F\x9A\xA2"));           // U+1F6A2
  EXPECT_TRUE(is_utf8("\xF4\x8F\xBF\xBF"));           // U+10FFFF, the last
  EXPECT_TRUE(is_utf8(std::string_view{"a\0b", 3}));  // NUL is a character
}

TEST(utf8, what_protobuf_refuses_is_not) {
  EXPECT_FALSE(is_utf8("\xFF"));
  EXPECT_FALSE(is_utf8("\x80"));              // a continuation without a lead
  EXPECT_FALSE(is_utf8("\xC3"));              // cut short
  EXPECT_FALSE(is_utf8("\xE2\x82"));          // cut short
  EXPECT_FALSE(is_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_utf8("\xE0\x80\xAF"));      // overlong '/'
  EXPECT_FALSE(is_utf8("\xED\xA0\x80"));      // a surrogate, U+D800
  EXPECT_FALSE(is_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_utf8("\xF5\x80\x80\x80"));
}

TEST(utf8, each_stray_byte_becomes_a_replacement_character) {
  EXPECT_EQ(to_utf8("ok \xC3\xBC"), "ok \xC3\xBC");
  EXPECT_EQ(to_utf8("a\xFF"
                    "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(to_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(is_utf8(to_utf8("\xC0\xAF\xED\xA0\x80 latin-1 caf\xE9")));
}

TEST(utf8, a_prefix_never_cuts_a_character) {
  std::string text =
      "ab\xE2\x82\xAC"
      "c";  // a b U+20AC c
  EXPECT_EQ(utf8_prefix(text, 10), text);
  EXPECT_EQ(utf8_prefix(text, 5), "ab\xE2\x82\xAC");
  EXPECT_EQ(utf8_prefix(text, 4), "ab");
  EXPECT_EQ(utf8_prefix(text, 3), "ab");
  EXPECT_EQ(utf8_prefix(text, 2), "ab");
  EXPECT_EQ(utf8_prefix(text, 0), "");
}

}  // namespace
}  // namespace lifeboat
