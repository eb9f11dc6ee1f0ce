// Encoding API objects to JSON and back. The templates are defined in fields.h and
// instantiated for every kind in that kind's source file, so callers need neither RapidJSON
// nor the field declarations.
//
// Decoding tolerates unknown members (a newer writer may add fields), applies declared
// defaults, and refuses wrong types, missing required fields and values outside a field's
// enum or range with an error naming the field path (e.g. "spec.hardware.cpus").
// Encoding leaves out empty optional values.
#pragma once

#include "host/common/status_or.h"

#include <rapidjson/fwd.h>

#include <string>
#include <string_view>

namespace banlieue::api {

template <class T>
std::string toJson(const T& value);

template <class T>
StatusOr<T> fromJson(std::string_view text);

// Parses into `doc`; the error says where the text stops being JSON.
Status parseJson(std::string_view text, rapidjson::Document& doc);
std::string serializeJson(const rapidjson::Value& value);

}  // namespace banlieue::api
