// This Provider's row in VMImage.status.perProvider: whether the image can be used on each of
// its failure domains. Pure, so every source kind and build phase is unit-tested.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>

namespace banlieue::roles::provider {

struct ImageRowContext {
  std::string class_name;  // the Provider's ProviderClass: sources[].providerClass matches it
  std::string provider_namespace;
  std::string provider_name;
  const rapidjson::Value* failure_domains = nullptr;  // Provider.status.failureDomains
};

// The row for `image`, or nullopt when the image has no source for this class (no row).
//   Template / BackingFile: the backend object named by `ref` is used as is; every failure
//     domain gets a zone row resolved to it (reason Referenced). No failure domains yet:
//     not ready, NoFailureDomains.
//   Url: waits on the imagebuilder's buildArtifact (BuildPending, BuildFailed); once built,
//     the import into each zone is pending (ImportPending) until the import Jobs report.
std::optional<rapidjson::Document> buildImageRow(const rapidjson::Value& image,
                                                 const ImageRowContext& context);

// The field manager of one Provider's row: rows of several Providers of one backend coexist
// in the list map only if each is applied by its own manager. Capped at 128 characters with
// a stable hash suffix.
std::string imageRowFieldManager(const std::string& class_name,
                                 const std::string& provider_namespace,
                                 const std::string& provider_name);

}  // namespace banlieue::roles::provider
