// A watch response body as the Kubernetes client reads it: the transport's line framing
// (LineFramer, fed in chunks of a size the input picks) and the client's decoding of each line
// into an event. Any bytes must give events or an error Status, never a crash. Property: the
// lines do not depend on how the stream was chunked.
#include "fuzz/quiet_logging.h"
#include "host/kube/client.h"
#include "host/kube/line_framer.h"

#include <banlieue/sdk/json.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using banlieue::kube::LineFramer;

// Small enough that the fuzzer reaches the WatchLineTooLong path.
constexpr size_t kMaxLine = 4096;

class StreamTransport final : public banlieue::kube::HttpTransport {
 public:
  StreamTransport(std::string_view body, size_t chunk) : body_(body), chunk_(chunk) {}

  banlieue::StatusOr<banlieue::kube::HttpResponse> send(
      const banlieue::kube::HttpRequest&) override {
    return banlieue::kube::HttpResponse{200, {}, {}};
  }

  banlieue::StatusOr<banlieue::kube::HttpResponse> stream(
      const banlieue::kube::HttpRequest&, const std::function<bool(std::string_view)>& on_line,
      const std::atomic<bool>*) override {
    LineFramer framer(kMaxLine);
    for (size_t at = 0; at < body_.size(); at += chunk_) {
      auto result = framer.feed(body_.substr(at, chunk_), on_line);
      if (result == LineFramer::Result::kStopped) return banlieue::kube::HttpResponse{200, {}, {}};
      if (result == LineFramer::Result::kTooLong) {
        return banlieue::error(banlieue::Code::kResourceExhausted, "WatchLineTooLong", "too long");
      }
    }
    framer.finish(on_line);
    return banlieue::kube::HttpResponse{200, {}, {}};
  }

 private:
  std::string_view body_;
  size_t chunk_;
};

std::vector<std::string> frame(std::string_view body, size_t chunk) {
  std::vector<std::string> lines;
  LineFramer framer(body.size() + 1);
  auto collect = [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  for (size_t at = 0; at < body.size(); at += chunk) framer.feed(body.substr(at, chunk), collect);
  framer.finish(collect);
  return lines;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  banlieue::fuzz::silenceLoggingOnce();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const size_t chunk = 1 + (size % 97);

  if (frame(body, chunk) != frame(body, body.size() + 1)) std::abort();

  banlieue::kube::ClientOptions options;
  options.qps = 0;
  auto client =
      banlieue::kube::makeKubeClient(std::make_unique<StreamTransport>(body, chunk), options);
  size_t events = 0;
  auto status = client->watch(
      banlieue::kube::resources::kConfigMap, "default", {}, [&](banlieue::kube::WatchEvent& event) {
        // What the informer reads from every event.
        (void)banlieue::sdk::json::stringOr(&event.object, "metadata.name");
        (void)banlieue::sdk::json::stringOr(&event.object, "metadata.namespace");
        (void)banlieue::sdk::json::stringOr(&event.object, "metadata.resourceVersion");
        return ++events < 64;
      });
  (void)status;
  return 0;
}
