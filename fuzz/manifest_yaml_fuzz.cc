// YAML manifests as the host reads them (api::parseYamlDocuments: a plugin's own CRD files,
// bootstrap's input) and the emitter crdgen and `bootstrap --dry-run` print. Any bytes must give
// documents or an error Status, never a crash or an escaping exception. Property: every
// document read survives the emitter unchanged (parse(toYaml(d)) == d), which is what the
// emitter's quoting promises; the emitter refuses only text that is not UTF-8, which the reader
// never hands over.
#include "host/api/codec.h"
#include "host/api/yaml.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto documents = banlieue::api::parseYamlDocuments(text, "fuzz.yaml");
  if (!documents.ok()) return 0;
  for (const auto& document : *documents) {
    auto yaml = banlieue::api::toYaml(document);
    if (!yaml.ok()) {
      std::fprintf(stderr, "the emitter refuses what the reader gave: %s\n",
                   yaml.status().message().c_str());
      std::abort();
    }
    const std::string& emitted = *yaml;
    auto back = banlieue::api::parseYamlDocuments(emitted, "emitted");
    const std::string want = banlieue::api::serializeJson(document);
    std::string got;
    if (back.ok() && back->size() == 1) got = banlieue::api::serializeJson((*back)[0]);
    if (!back.ok() || back->size() != 1 || got != want) {
      std::fprintf(
          stderr,
          "the emitter does not round-trip:\n%s\n--- emitted ---\n%s\n--- read back ---\n%s\n",
          want.c_str(), emitted.c_str(), back.ok() ? got.c_str() : back.status().message().c_str());
      std::abort();
    }
  }
  return 0;
}
