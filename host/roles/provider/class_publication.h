// What a provider pod publishes on its ProviderClass once its plugin is loaded: the plugin's
// name, version, ABI, digest, infrastructure kinds and operations (status.plugin,
// docs/adr/0043). The operator and the controller act on it, so neither needs a copy of a
// plugin that ships only in its provider image.
#pragma once

#include "host/api/provider.h"
#include "host/kube/client.h"
#include "host/plugin/plugin.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <rapidjson/document.h>

#include <atomic>
#include <memory>
#include <string>

namespace banlieue::roles::provider {

// From the loaded plugin: its manifest, its table's ABI version, describe's operations and
// features, and the library's sha256. `class_generation` is the class's metadata.generation
// the plugin was resolved from.
api::PublishedPlugin describePublished(const plugin::Plugin& plugin, int64_t class_generation);

// Whether to write `desired` over the class's status.plugin as it is (`current`, null when
// absent). Never over a publication from a newer class generation (a pod of an older rollout
// still running); over one of the same generation that differs only once per process
// (`already_written`), so pods of two builds under one generation cannot keep overwriting
// each other.
bool shouldPublish(const rapidjson::Value* current, const api::PublishedPlugin& desired,
                   bool already_written);

// Keeps status.plugin of one class as this pod's plugin says, re-publishing when someone
// removes or changes it. Runs while the pod leads; one reconcile at a time.
class ClassPublisher : public runtime::Reconciler {
 public:
  ClassPublisher(kube::KubeClient& client, runtime::Informer& classes,
                 api::PublishedPlugin published, std::string field_manager);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& classes_;
  api::PublishedPlugin published_;
  std::string field_manager_;
  bool written_ = false;
};

}  // namespace banlieue::roles::provider
