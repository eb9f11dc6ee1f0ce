#include "host/common/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace banlieue::common {
namespace {

TEST(Base64Test, DecodesWithAndWithoutPaddingAndIgnoresLineBreaks) {
  EXPECT_EQ(decodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(decodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(decodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(decodeBase64(""), "");
  std::string binary = *decodeBase64("AP8A/w==");
  ASSERT_EQ(binary.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(binary[1]), 0xFF);
}

TEST(Base64Test, EncodesWithPaddingAndRoundTripsEveryLength) {
  EXPECT_EQ(encodeBase64("hello"), "aGVsbG8=");
  EXPECT_EQ(encodeBase64("hello!"), "aGVsbG8h");
  EXPECT_EQ(encodeBase64("hi"), "aGk=");
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(decodeBase64(encodeBase64(s)), s);
  }
}

TEST(Base64Test, RefusesCharactersOutsideTheAlphabet) {
  EXPECT_FALSE(decodeBase64("aGVs*G8=").has_value());
  EXPECT_FALSE(decodeBase64("aGVsbG8-").has_value());  // base64url is not what Secrets use
}

}  // namespace
}  // namespace banlieue::common
