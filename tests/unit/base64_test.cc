#include "host/common/base64.h"

#include <gtest/gtest.h>

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

TEST(Base64Test, RefusesCharactersOutsideTheAlphabet) {
  EXPECT_FALSE(decodeBase64("aGVs*G8=").has_value());
  EXPECT_FALSE(decodeBase64("aGVsbG8-").has_value());  // base64url is not what Secrets use
}

}  // namespace
}  // namespace banlieue::common
