#include "host/common/fnv_hash.h"

#include <gtest/gtest.h>

namespace banlieue::common {
namespace {

// Usable where names are built at compile time.
static_assert(fnv1a32("") == kFnv1a32OffsetBasis);
static_assert(fnv1a64("") == kFnv1a64OffsetBasis);

TEST(FnvHash, ThirtyTwoBitReferenceVectors) {
  EXPECT_EQ(fnv1a32(""), 0x811c9dc5U);
  EXPECT_EQ(fnv1a32("a"), 0xe40c292cU);
  EXPECT_EQ(fnv1a32("foobar"), 0xbf9cf968U);
}

TEST(FnvHash, SixtyFourBitReferenceVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

// The values names and annotations already carry in clusters: they must never change.
TEST(FnvHash, TruncatedBasisKeepsExistingNames) {
  EXPECT_EQ(fnv1a64("", kFnv1a64TruncatedBasis), 0x14650fb0739d0383ULL);
  EXPECT_EQ(fnv1a64("a", kFnv1a64TruncatedBasis), 0x44bd8ad473cd9906ULL);
  EXPECT_EQ(fnv1a64("foobar", kFnv1a64TruncatedBasis), 0x88fad7c0a8ff07f2ULL);
  EXPECT_EQ(fnv1a64("default/web-1", kFnv1a64TruncatedBasis), 0x56e6c9acc1a91b2bULL);
}

TEST(FnvHash, HighBytesHashAsUnsigned) {
  // UTF-8 "é": a sign-extended char would flip the state's high bits and give another value.
  EXPECT_EQ(fnv1a64("\xc3\xa9"), 0x0ac21707b7181e01ULL);
}

}  // namespace
}  // namespace banlieue::common
