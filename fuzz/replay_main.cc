// Replays corpora through LLVMFuzzerTestOneInput where libFuzzer is not linked (the gcc build
// and its unit tier): every file of the directories given, plus every prefix and single-byte
// corruption of it at a stride, so truncated and damaged inputs run on every test run. Exits
// non-zero when a directory is missing or holds no file; a crash, sanitizer report or failed
// property check in the target aborts it, which fails the test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// BANLIEUE_REPLAY_TRACE=1 names each input before it runs: the last name printed is the input
// that hung or crashed.
const bool kTrace = std::getenv("BANLIEUE_REPLAY_TRACE") != nullptr;

void trace(const std::filesystem::path& file, const char* what, size_t at, int byte = -1) {
  if (!kTrace) return;
  std::fprintf(stderr, "%s: %s %zu", file.c_str(), what, at);
  if (byte >= 0) std::fprintf(stderr, " = 0x%02x", byte);
  std::fprintf(stderr, "\n");
}

void run(const std::string& input) {
  // A copy of exactly `size` bytes, as libFuzzer hands it over, so ASan sees reads past it.
  std::vector<uint8_t> bytes(input.begin(), input.end());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t files = 0;
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::filesystem::directory_iterator it(argv[i], ec);
    if (ec) {
      std::fprintf(stderr, "%s: %s\n", argv[i], ec.message().c_str());
      return 1;
    }
    for (const auto& entry : it) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      const std::string text = s.str();
      ++files;
      trace(entry.path(), "whole", text.size());
      run(text);
      ++inputs;
      // At most about 300 prefixes and 300 corrupted positions per file, so a large seed
      // (a deeply nested document, a long line) costs what a small one does.
      const size_t cut_stride = std::max<size_t>(13, text.size() / 300);
      const size_t corrupt_stride = std::max<size_t>(7, text.size() / 300);
      for (size_t cut = 0; cut < text.size(); cut += cut_stride, ++inputs) {
        trace(entry.path(), "prefix", cut);
        run(text.substr(0, cut));
      }
      for (size_t at = 0; at < text.size(); at += corrupt_stride) {
        for (char c : {'<', '>', '"', '{', '}', ':', '\n', '\0', 'x'}) {
          std::string damaged = text;
          damaged[at] = c;
          trace(entry.path(), "byte", at, static_cast<unsigned char>(c));
          run(damaged);
          ++inputs;
        }
      }
    }
  }
  std::printf("replayed %zu inputs from %zu files\n", inputs, files);
  return files > 0 ? 0 : 1;
}
