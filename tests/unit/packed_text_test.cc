// The informer cache's packed texts (docs/adr/0055): every text comes back exactly, whichever
// dictionary packed it, and siblings pack small.
#include "host/runtime/packed_text.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::runtime {
namespace {

std::string object(int i, const std::string& extra = "") {
  return R"({"metadata":{"name":"vm-)" + std::to_string(i) +
         R"(","namespace":"team-a","labels":{"app":"web"}},"spec":{"classRef":{"name":"small"},)"
         R"("imageRef":{"name":"debian-12"}},"status":{"conditions":[{"type":"Ready",)"
         R"("status":"True","reason":"Reconciled","message":"VirtualMachine reconciled"}]})" +
         extra + "}";
}

std::string randomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

TEST(PackedTextTest, EveryTextComesBackExactly) {
  TextPacker packer;
  const std::vector<std::string> texts = {
      "",
      "{}",
      object(1),
      object(2),
      std::string(100000, 'x'),                    // beyond the 8 KiB window
      randomBytes(5000, 7),                        // does not deflate: kept raw
      std::string("\0\x01\xff{\"\xc3\xa9\"}", 9),  // bytes a tag or length could be
      object(3, R"(,"big":")" + std::string(20000, 'y') + "\""),
  };
  std::vector<std::string> packed;
  for (const auto& text : texts) packed.push_back(packer.pack(text));
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_FALSE(packed[i].empty());
    EXPECT_EQ(packer.unpack(packed[i]), texts[i]) << "text " << i;
  }
}

TEST(PackedTextTest, ASiblingPacksToAFractionOfItsText) {
  TextPacker packer;
  (void)packer.pack(object(1));
  const std::string sibling = object(2);
  const std::string packed = packer.pack(sibling);
  EXPECT_LT(packed.size() * 4, sibling.size()) << packed.size() << " of " << sibling.size();
  EXPECT_EQ(packer.dictionaries(), 1u) << "a sibling that packs small adopts no dictionary";
}

TEST(PackedTextTest, TextsPackedWithAnOlderDictionaryStillUnpack) {
  TextPacker packer;
  const std::string young = R"({"metadata":{"name":"vm-1"}})";
  const std::string packed_young = packer.pack(young);
  // Unlike the first dictionary: adopted as the next one.
  const std::string grown = object(1, R"(,"addresses":[{"address":"10.0.0.7"}])");
  const std::string packed_grown = packer.pack(grown);
  EXPECT_EQ(packer.dictionaries(), 2u);
  for (int i = 0; i < 20; ++i) (void)packer.pack(randomBytes(200, 100 + i));  // all slots used
  EXPECT_EQ(packer.dictionaries(), TextPacker::kMaxDictionaries);
  EXPECT_EQ(packer.unpack(packed_young), young);
  EXPECT_EQ(packer.unpack(packed_grown), grown);
  const std::string after = object(9);
  EXPECT_EQ(packer.unpack(packer.pack(after)), after);
}

// Readers unpack from their worker threads while the informer's thread packs and adopts.
TEST(PackedTextTest, ReadersUnpackWhileTheWriterPacksAndAdoptsDictionaries) {
  TextPacker packer;
  const std::string first = object(0);
  const std::string packed_first = packer.pack(first);
  std::atomic<bool> done{false};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        if (packer.unpack(packed_first) != first) ++mismatches;
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    const std::string text = i % 100 == 0 ? randomBytes(300, i) : object(i);
    if (packer.unpack(packer.pack(text)) != text) ++mismatches;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace banlieue::runtime
