// RapidJSON helpers shared by plugins and the host: parse with a located error, serialise,
// and read optional members without a ladder of HasMember/IsString checks.
#pragma once

#include <banlieue/sdk/status.h>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::sdk::json {

// The deepest nesting of arrays and objects a document may have. RapidJSON parses, copies,
// validates and frees values recursively, so a few hundred KiB of '[' overflow the stack of
// whoever reads them: an API server, a backend's API or a plugin could crash the process. Go's
// encoding/json (the API server's) stops at 10000; no banlieue payload nests beyond a few dozen.
inline constexpr size_t kMaxDepth = 1000;

// Whether `text` nests arrays and objects deeper than `max_depth` ('[' and '{' inside strings
// do not count). One pass, no allocation: call it on outside text before RapidJSON parses it.
inline bool nestsDeeperThan(std::string_view text, size_t max_depth = kMaxDepth) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// Parses text; on failure throws Error(kInvalidArgument, "InvalidJson", "<what> is not valid
// JSON: <detail> at offset N"), also for a document nested deeper than kMaxDepth. `what` names the
// document ("reconcile request").
inline rapidjson::Document parse(std::string_view text, std::string_view what) {
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error(
        Code::kInvalidArgument, "InvalidJson",
        std::string(what) + " is not valid JSON: a NUL byte at offset " + std::to_string(nul));
  }
  if (nestsDeeperThan(text)) {
    throw Error(Code::kInvalidArgument, "InvalidJson",
                std::string(what) + " is not valid JSON: it nests deeper than " +
                    std::to_string(kMaxDepth) + " levels");
  }
  rapidjson::Document doc;
  // Parse from a NUL-terminated, padded copy: RapidJSON's (pointer, length) overload goes
  // through a generic stream about twice as slow as its string-stream path, and the copy costs
  // far less than that (bench/abi_call_bench.cc). The SIMD scanner (RAPIDJSON_SSE2/NEON) reads
  // whole 16-byte blocks, so up to 15 bytes past the terminator must be ours to read.
  // Anything but whitespace after the value is an error.
  std::string padded;
  padded.reserve(text.size() + 16);
  padded.assign(text);
  padded.append(15, '\0');
  doc.Parse(padded.c_str());
  if (doc.HasParseError()) {
    throw Error(Code::kInvalidArgument, "InvalidJson",
                std::string(what) +
                    " is not valid JSON: " + rapidjson::GetParseError_En(doc.GetParseError()) +
                    " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  return doc;
}

inline std::string serialize(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

// Member `key` of `object`, or nullptr when object is not an object or lacks the key.
inline const rapidjson::Value* member(const rapidjson::Value* object, std::string_view key) {
  if (object == nullptr || !object->IsObject()) return nullptr;
  // A Value key, not a StringRef: StringRef converts to const char* and the const char*
  // overload would strlen() past the end of a dotted path's segment.
  const rapidjson::Value name(
      rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
  auto it = object->FindMember(name);
  return it == object->MemberEnd() ? nullptr : &it->value;
}

// Follows a dotted path ("metadata.name"); nullptr when any step is missing.
inline const rapidjson::Value* find(const rapidjson::Value* root, std::string_view path) {
  const rapidjson::Value* current = root;
  while (current != nullptr && !path.empty()) {
    auto dot = path.find('.');
    current = member(current, path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
  }
  return current;
}

inline std::optional<std::string_view> string(const rapidjson::Value* root, std::string_view path) {
  const rapidjson::Value* v = find(root, path);
  if (v == nullptr || !v->IsString()) return std::nullopt;
  return std::string_view(v->GetString(), v->GetStringLength());
}

inline std::string stringOr(const rapidjson::Value* root, std::string_view path,
                            std::string_view fallback = {}) {
  return std::string(string(root, path).value_or(fallback));
}

inline std::optional<int64_t> integer(const rapidjson::Value* root, std::string_view path) {
  const rapidjson::Value* v = find(root, path);
  if (v == nullptr || !v->IsInt64()) return std::nullopt;
  return v->GetInt64();
}

inline bool boolean(const rapidjson::Value* root, std::string_view path, bool fallback = false) {
  const rapidjson::Value* v = find(root, path);
  return v != nullptr && v->IsBool() ? v->GetBool() : fallback;
}

// Like string(), but a missing or non-string value is an INVALID_ARGUMENT naming the field.
inline std::string_view requireString(const rapidjson::Value* root, std::string_view path,
                                      std::string_view what) {
  auto value = string(root, path);
  if (!value || value->empty()) {
    throw Error(Code::kInvalidArgument, "MissingField",
                std::string(what) + ": field '" + std::string(path) + "' is required");
  }
  return *value;
}

inline rapidjson::Value stringValue(std::string_view s, rapidjson::Document::AllocatorType& a) {
  return rapidjson::Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

// A JSON array of strings.
inline rapidjson::Value stringArray(const std::vector<std::string>& items,
                                    rapidjson::Document::AllocatorType& a) {
  rapidjson::Value list(rapidjson::kArrayType);
  for (const auto& s : items) list.PushBack(stringValue(s, a), a);
  return list;
}

}  // namespace banlieue::sdk::json
