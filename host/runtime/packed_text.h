// How an informer keeps each cached object's compact JSON text small (docs/adr/0055): deflate
// with a preset dictionary taken from an earlier object of the same informer. Objects of one
// kind share nearly all their keys and most of their values, so a sibling as dictionary packs
// a 1.7 KB VirtualMachine into about 100-500 bytes, where deflate alone reaches 700.
//
// The dictionaries are append-only: a packed text names the one it was packed with, so an
// object packed long ago still unpacks after a newer dictionary was adopted. A text that packs
// to more than a quarter of its size, while fewer than kMaxDictionaries exist, becomes the next
// dictionary (the first objects a cache sees are often young ones, without status).
//
// pack() and unpack() may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace banlieue::runtime {

class TextPacker {
 public:
  static constexpr size_t kMaxDictionaries = 8;
  // Deflate's window with windowBits 13: the part of a dictionary a packed text can refer to.
  static constexpr size_t kMaxDictionaryBytes = 8192;

  // The packed form of `text` (never empty). Texts that deflate would not shrink are kept as
  // they are, behind a one-byte tag.
  std::string pack(std::string_view text);
  // The text pack() was given. `packed` must come from this packer.
  std::string unpack(std::string_view packed) const;

  size_t dictionaries() const { return count_.load(std::memory_order_acquire); }

 private:
  std::string deflateWith(std::string_view text, size_t dictionary) const;

  // Slots written once, before count_ publishes them; never changed after.
  std::array<std::string, kMaxDictionaries> dictionaries_;
  std::atomic<size_t> count_{0};
  std::mutex adopt_mutex_;
};

}  // namespace banlieue::runtime
