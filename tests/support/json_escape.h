// For fixtures that write JSON documents as text: a value escaped by the SDK's writer, so
// quotes, backslashes and control characters (a PEM's newlines) always make valid JSON.
#pragma once

#include <banlieue/sdk/json.h>

#include <string>
#include <string_view>

namespace banlieue::testing {

// `text` as it goes between the quotes of a JSON string.
inline std::string jsonEscape(std::string_view text) {
  rapidjson::Document doc;
  const std::string quoted = sdk::json::serialize(sdk::json::stringValue(text, doc.GetAllocator()));
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace banlieue::testing
