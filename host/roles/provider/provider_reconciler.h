// Reconciles this process's own Provider: keeps the plugin instance connected with the
// current credentials and CA bundle, walks the backend with introspect, and reports
// status.failureDomains with the ProviderReachable and Ready conditions (the plugin's reason
// and message when it fails). The operator owns status.workload; this writes only its fields.
#pragma once

#include "host/roles/provider/runtime_context.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace banlieue::roles::provider {

struct ProviderReconcilerOptions {
  // How often the credentials Secret and CA bundle are re-read (rotation is noticed within it;
  // reads only) and how often the backend is walked again when nothing changed.
  std::chrono::seconds credentials_poll{30};
  std::chrono::seconds introspect_interval{300};
};

class ProviderReconciler final : public runtime::Reconciler {
 public:
  ProviderReconciler(RuntimeContext& context, runtime::Informer& providers,
                     ProviderReconcilerOptions options = {});
  runtime::Result reconcile(const runtime::Request& request) override;

  // True once an introspection succeeded with the current instance (readiness).
  bool connected() const;

 private:
  // Conditions + failure domains as they should be, or the failure as conditions.
  runtime::Result report(const rapidjson::Value& provider, const Status& failure,
                         const rapidjson::Value* failure_domains);

  RuntimeContext& context_;
  runtime::Informer& providers_;
  ProviderReconcilerOptions options_;
  mutable std::mutex mu_;
  int introspected_generation_ = -1;  // session generation the last walk used
  int64_t introspected_object_generation_ = -1;
  std::chrono::steady_clock::time_point last_introspect_{};
  std::optional<std::string> walk_token_;  // an introspect still in progress
  bool connected_ = false;
};

}  // namespace banlieue::roles::provider
