// Loads a plugin through the real loader and calls reconcile twice, each time with a request
// buffer that is freed right after the call, as the host does. Built with AddressSanitizer:
// a plugin that keeps the borrowed pointer reads freed memory on the second call.
#include "host/plugin/loader.h"

#include <cstdio>
#include <memory>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <plugin-dir>\n", argv[0]);
    return 2;
  }
  std::filesystem::path dir = std::filesystem::absolute(argv[1]);
  banlieue::plugin::LoadOptions options;
  options.plugin_root = dir.parent_path();
  auto plugin = banlieue::plugin::PluginLoader(options).loadDirectory(dir);
  if (!plugin.ok()) {
    std::fprintf(stderr, "driver: %s\n", plugin.status().message().c_str());
    return 1;
  }
  banlieue::plugin::CallResult created;
  auto instance = (*plugin)->createInstance(
      R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p"},"spec":{"connection":{"endpoint":"test://"}}}})",
      {}, created);
  if (!instance) {
    std::fprintf(stderr, "driver: %s\n", created.outcome.message.c_str());
    return 1;
  }
  for (int i = 0; i < 2; ++i) {
    auto request = std::make_unique<std::string>(
        R"({"object":{"apiVersion":"infrastructure.test.banlieue.io/v1beta2","kind":"TestMachine","metadata":{"name":"vm","uid":"u-)" +
        std::to_string(i) + R"("}}})");
    auto result = instance->reconcile("TestMachine", *request);
    request.reset();  // the borrowed buffer is gone once the call has returned
    std::printf("driver: reconcile %d -> %s\n", i, result.outcome.codeName().c_str());
  }
  std::printf("driver: 2 reconciles done\n");
  return 0;
}
