// Plugin replies as the host reads them: the body of a describe, introspect, reconcile and
// validate reply checked against the payload schemas compiled into the host (sdk/schemas), the
// gate every reply passes before its fields are used. Any bytes must give OK or an
// InvalidArgument naming the keyword and JSON pointer, never a crash.
#include "host/plugin/payload_schemas.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (std::string_view schema : banlieue::plugin::payloadSchemaNames()) {
    auto status = banlieue::plugin::validatePayload(schema, body);
    if (!status.isOk() && status.code() != banlieue::Code::kInvalidArgument) std::abort();
  }
  return 0;
}
