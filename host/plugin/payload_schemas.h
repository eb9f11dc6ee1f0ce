// The JSON Schemas of sdk/schemas/, compiled into the host, and a validator over them.
#pragma once

#include "host/common/status_or.h"

#include <string_view>
#include <vector>

namespace banlieue::plugin {

// Schema names are the file names without ".json": "describe.response", "reconcile.request", …
std::vector<std::string_view> payloadSchemaNames();

// OK when `document` is JSON that satisfies the named schema; otherwise INVALID_ARGUMENT
// naming the failing keyword and JSON pointer ("#/kinds/0/kind: pattern").
Status validatePayload(std::string_view schema_name, std::string_view document);

}  // namespace banlieue::plugin
