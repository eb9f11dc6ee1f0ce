// YAML in and out for manifests: a deterministic block-style emitter (what crdgen and
// `bootstrap --dry-run` print) and a multi-document reader (plugin-shipped CRDs).
#pragma once

#include "host/common/status_or.h"

#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace banlieue::api {

// One YAML document (no leading "---") that reads back as `value`. Strings are quoted whenever
// a plain scalar could be read back as anything but the same string (numbers, booleans, null,
// YAML 1.1 yes/no/on/off), with JSON's escapes (a NUL is \u0000); a key too long for an
// implicit key is written as an explicit one ("? key"). A string or key that is not UTF-8 is
// refused (reason NotUtf8, naming where it is): YAML holds Unicode text only.
StatusOr<std::string> toYaml(const rapidjson::Value& value);

// Documents joined with "---" lines, the form `kubectl apply -f -` reads; refused as toYaml
// refuses, naming the document.
StatusOr<std::string> toYamlStream(const std::vector<const rapidjson::Value*>& documents);

// Refuses (reason InvalidYaml) a stream whose aliases expand past 2^17 nodes (a "billion
// laughs") or make a node contain itself (`&a [*a]`), or on which yaml-cpp 0.7's LoadAll would
// never return (a stray ',' where a document starts). Call it before handing text from outside to
// yaml-cpp; parseYamlDocuments does.
Status checkYamlStream(const std::string& text, const std::string& what);

// Every non-empty document of a YAML stream as JSON. `what` names the source in errors. Refuses
// (InvalidYaml) what checkYamlStream refuses, and a scalar that is not UTF-8 text.
StatusOr<std::vector<rapidjson::Document>> parseYamlDocuments(const std::string& text,
                                                              const std::string& what);

}  // namespace banlieue::api
