// Replays a corpus through LLVMFuzzerTestOneInput where libFuzzer is not linked (gcc builds):
// every file in the given directories, and every prefix and single-byte corruption of it at a
// stride, so truncated and damaged responses are exercised on each test run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      const std::string text = s.str();
      auto run = [&](const std::string& input) {
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
        ++inputs;
      };
      run(text);
      for (size_t cut = 0; cut < text.size(); cut += 13) run(text.substr(0, cut));
      for (size_t at = 0; at < text.size(); at += 7) {
        for (char c : {'<', '>', '"', '\0', 'x'}) {
          std::string damaged = text;
          damaged[at] = c;
          run(damaged);
        }
      }
    }
  }
  std::printf("replayed %zu inputs\n", inputs);
  return inputs > 0 ? 0 : 1;
}
