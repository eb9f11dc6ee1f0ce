#include "host/runtime/packed_text.h"

#include "host/common/logging.h"

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace banlieue::runtime {
namespace {

// windowBits 13 (an 8 KiB window, negative: raw deflate, no header or checksum) and memLevel 6
// keep a deflate stream near 64 KiB; the defaults (32 KiB, level 8) take about 270 KiB. Level 1:
// the dictionary, not the effort, is what makes these texts small.
constexpr int kWindowBits = 13;
constexpr int kMemLevel = 6;
constexpr int kLevel = 1;
// The first byte of a packed text: the dictionary's index, or kRaw.
constexpr unsigned char kRaw = 0xff;

struct Deflater {
  Deflater() {
    if (deflateInit2(&stream, kLevel, Z_DEFLATED, -kWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      ok = false;
    }
  }
  ~Deflater() {
    if (ok) deflateEnd(&stream);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  z_stream stream{};
  bool ok = true;
};

struct Inflater {
  Inflater() {
    if (inflateInit2(&stream, -kWindowBits) != Z_OK) ok = false;
  }
  ~Inflater() {
    if (ok) inflateEnd(&stream);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream stream{};
  bool ok = true;
};

// Streams are reused, not made per text (making one allocates its whole state), and shared by
// every informer of the process: as many exist as texts were ever packed or unpacked at once,
// not one per thread.
template <typename Stream>
class Pool {
 public:
  class Lease {
   public:
    Lease(Pool& pool, std::unique_ptr<Stream> stream) : pool_(pool), stream_(std::move(stream)) {}
    ~Lease() { pool_.give(std::move(stream_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Stream& operator*() const { return *stream_; }

   private:
    Pool& pool_;
    std::unique_ptr<Stream> stream_;
  };

  Lease take() {
    std::unique_ptr<Stream> stream;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        stream = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!stream) stream = std::make_unique<Stream>();
    return Lease(*this, std::move(stream));
  }

 private:
  void give(std::unique_ptr<Stream> stream) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(stream));
  }
  std::mutex mutex_;
  std::vector<std::unique_ptr<Stream>> free_;
};

Pool<Deflater>& deflaters() {
  static auto* pool = new Pool<Deflater>();  // never destroyed: informers may outlive statics
  return *pool;
}
Pool<Inflater>& inflaters() {
  static auto* pool = new Pool<Inflater>();
  return *pool;
}

[[noreturn]] void corrupted(const char* what) {
  // A packed text is written by this process and never changed: failing to unpack one means
  // memory was corrupted, and no answer from the cache can be trusted.
  common::logger("informer")->critical("informer cache: {}", what);
  std::abort();
}

void putLength(std::string& out, size_t length) {
  while (length >= 0x80) {
    out.push_back(static_cast<char>((length & 0x7f) | 0x80));
    length >>= 7;
  }
  out.push_back(static_cast<char>(length));
}

size_t takeLength(std::string_view& in) {
  size_t length = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    auto byte = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    length |= static_cast<size_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return length;
  }
  corrupted("a packed text's length is truncated");
}

std::string raw(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 1);
  out.push_back(static_cast<char>(kRaw));
  out.append(text);
  return out;
}

}  // namespace

std::string TextPacker::deflateWith(std::string_view text, size_t dictionary) const {
  auto lease = deflaters().take();
  Deflater& d = *lease;
  if (!d.ok || deflateReset(&d.stream) != Z_OK) return raw(text);
  const std::string& dict = dictionaries_[dictionary];
  if (deflateSetDictionary(&d.stream, reinterpret_cast<const Bytef*>(dict.data()),
                           static_cast<uInt>(dict.size())) != Z_OK) {
    return raw(text);
  }
  std::string out;
  out.push_back(static_cast<char>(dictionary));
  putLength(out, text.size());
  const size_t header = out.size();
  out.resize(header + deflateBound(&d.stream, static_cast<uLong>(text.size())));
  d.stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  d.stream.avail_in = static_cast<uInt>(text.size());
  d.stream.next_out = reinterpret_cast<Bytef*>(out.data() + header);
  d.stream.avail_out = static_cast<uInt>(out.size() - header);
  if (deflate(&d.stream, Z_FINISH) != Z_STREAM_END) return raw(text);
  out.resize(header + d.stream.total_out);
  if (out.size() > text.size()) return raw(text);
  out.shrink_to_fit();  // the cache holds it for the object's life: no slack
  return out;
}

std::string TextPacker::pack(std::string_view text) {
  if (text.size() > UINT32_MAX / 2) return raw(text);
  size_t count = dictionaries();
  std::string packed;
  if (count > 0) {
    packed = deflateWith(text, count - 1);
    if (packed.size() * 4 <= text.size() || count == kMaxDictionaries) return packed;
  }
  {
    // Adopt this text as the next dictionary. Only the informer's own thread packs, but the
    // lock keeps two packers from taking one slot should that change.
    std::lock_guard lock(adopt_mutex_);
    count = dictionaries();
    if (count < kMaxDictionaries) {
      dictionaries_[count] = std::string(text.substr(0, kMaxDictionaryBytes));
      count_.store(count + 1, std::memory_order_release);
      ++count;
    }
  }
  std::string again = deflateWith(text, count - 1);
  return packed.empty() || again.size() < packed.size() ? again : packed;
}

std::string TextPacker::unpack(std::string_view packed) const {
  if (packed.empty()) corrupted("a packed text is empty");
  const auto tag = static_cast<unsigned char>(packed.front());
  packed.remove_prefix(1);
  if (tag == kRaw) return std::string(packed);
  if (tag >= dictionaries()) corrupted("a packed text names a dictionary that does not exist");
  const size_t length = takeLength(packed);
  auto lease = inflaters().take();
  Inflater& i = *lease;
  const std::string& dict = dictionaries_[tag];
  if (!i.ok || inflateReset(&i.stream) != Z_OK ||
      inflateSetDictionary(&i.stream, reinterpret_cast<const Bytef*>(dict.data()),
                           static_cast<uInt>(dict.size())) != Z_OK) {
    corrupted("cannot start inflating a packed text");
  }
  std::string out(length, '\0');
  i.stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  i.stream.avail_in = static_cast<uInt>(packed.size());
  i.stream.next_out = reinterpret_cast<Bytef*>(out.data());
  i.stream.avail_out = static_cast<uInt>(out.size());
  if (inflate(&i.stream, Z_FINISH) != Z_STREAM_END || i.stream.total_out != length) {
    corrupted("a packed text does not inflate to its recorded length");
  }
  return out;
}

}  // namespace banlieue::runtime
