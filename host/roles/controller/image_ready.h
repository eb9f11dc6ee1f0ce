// VMImage's top-level Ready, which only the controller can write because only it reads every
// Provider's row (banlieue-spec §4.1.9): True when every row of an existing Provider is ready.
// Rows left behind by deleted Providers are ignored (the original let them block forever).
#pragma once

#include "host/api/vm_class.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <functional>
#include <string>

namespace banlieue::controller {

// `provider_exists(namespace, name)`.
api::Condition imageReadyCondition(
    const api::VMImage& image,
    const std::function<bool(const std::string&, const std::string&)>& provider_exists);

// Applies only status.conditions[Ready] with field manager banlieue.io/controller (a list map
// keyed on type, so the imagebuilder's and providers' entries are untouched), and only when it
// differs from the cached one.
class ImageReconciler final : public runtime::Reconciler {
 public:
  // `ns` non-empty: the Provider cache holds that namespace only, so only images whose rows all
  // come from it are judged.
  ImageReconciler(kube::KubeClient& client, runtime::Informer& images, runtime::Informer& providers,
                  std::string ns = {})
      : client_(client), images_(images), providers_(providers), ns_(std::move(ns)) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& images_;
  runtime::Informer& providers_;
  std::string ns_;
};

}  // namespace banlieue::controller
