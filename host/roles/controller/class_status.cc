#include "host/roles/controller/class_status.h"

#include "host/api/codec.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/scheduler.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <optional>

namespace banlieue::controller {
namespace {
namespace json = sdk::json;

constexpr std::chrono::minutes kClassResync{5};

std::string keyOf(const api::Provider& provider) {
  return provider.metadata.namespace_ + "/" + provider.metadata.name;
}

bool sameStatus(const api::VMClassStatus& a, const api::VMClassStatus& b) {
  if (a.observed_generation != b.observed_generation || a.provider_count != b.provider_count ||
      a.providers.size() != b.providers.size() || a.conditions.size() != b.conditions.size())
    return false;
  for (size_t i = 0; i < a.providers.size(); ++i) {
    if (a.providers[i].provider_name != b.providers[i].provider_name ||
        a.providers[i].provider_namespace != b.providers[i].provider_namespace ||
        a.providers[i].failure_domains != b.providers[i].failure_domains)
      return false;
  }
  for (size_t i = 0; i < a.conditions.size(); ++i) {
    const auto &x = a.conditions[i], &y = b.conditions[i];
    if (x.type != y.type || x.status != y.status || x.reason != y.reason ||
        x.message != y.message || x.observed_generation != y.observed_generation)
      return false;
  }
  return true;
}

}  // namespace

api::VMClassStatus classStatus(const api::VMClass& vm_class,
                               const std::vector<api::Provider>& providers) {
  std::vector<const api::Provider*> sorted;
  sorted.reserve(providers.size());
  for (const auto& provider : providers) sorted.push_back(&provider);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return keyOf(*a) < keyOf(*b); });
  api::VMClassStatus status;
  status.observed_generation = vm_class.metadata.generation;
  std::vector<std::string> served, lacking;
  for (const auto* provider : sorted) {
    api::ClassProvider fit{.provider_name = provider->metadata.name,
                           .provider_namespace = provider->metadata.namespace_};
    std::string first_reason;
    for (const auto& fd : provider->status.failure_domains) {
      std::string why = classUnsatisfiedBy(vm_class, fd);
      if (why.empty()) {
        fit.failure_domains.push_back(fd.name);
      } else if (first_reason.empty()) {
        first_reason = why;
      }
    }
    if (!fit.failure_domains.empty()) {
      served.push_back(keyOf(*provider) + " (" + std::to_string(fit.failure_domains.size()) +
                       " failure domain" + (fit.failure_domains.size() == 1 ? "" : "s") + ")");
      status.providers.push_back(std::move(fit));
    } else {
      lacking.push_back(keyOf(*provider) + ": " +
                        (provider->status.failure_domains.empty()
                             ? std::string("publishes no failure domain yet")
                             : first_reason));
    }
  }
  status.provider_count = static_cast<int32_t>(status.providers.size());
  api::Condition ready{.type = "Ready", .observed_generation = vm_class.metadata.generation};
  const std::string of = std::to_string(sorted.size()) + " Provider(s)";
  if (sorted.empty()) {
    ready.status = "False";
    ready.reason = "NoProviders";
    ready.message = "no Provider exists to serve this class";
  } else if (status.providers.empty()) {
    ready.status = "False";
    ready.reason = "NoProviderSatisfies";
    ready.message = "none of " + of + " can serve this class: " + joinCapped(lacking);
  } else {
    ready.status = "True";
    ready.reason = "ProvidersAvailable";
    ready.message = "served by " + std::to_string(status.providers.size()) + " of " + of + ": " +
                    joinCapped(served);
  }
  status.conditions.push_back(std::move(ready));
  return status;
}

bool classStatusWriteNeeded(const api::VMClassStatus& wanted, const api::VMClassStatus& cached,
                            const api::VMClassStatus* last_written) {
  return !sameStatus(wanted, cached) ||
         (last_written != nullptr && !sameStatus(wanted, *last_written));
}

runtime::Result ClassStatusReconciler::reconcile(const runtime::Request& request) {
  auto object = classes_.get(request.key());
  if (!object) {
    const std::lock_guard lock(written_mutex_);
    last_written_.erase(request.name);
    return runtime::Result::done();
  }
  auto vm_class = api::fromJson<api::VMClass>(json::serialize(*object));
  if (!vm_class.ok()) return runtime::Result::terminal(vm_class.status());
  std::vector<api::Provider> providers;
  for (const auto& p : providers_.list()) {
    auto provider = api::fromJson<api::Provider>(json::serialize(*p));
    if (provider.ok()) providers.push_back(std::move(*provider));
  }
  api::VMClassStatus wanted = classStatus(*vm_class, providers);
  // Looked at again now and then: the status depends on every Provider, and a class is cheap to
  // judge from the caches (no request unless it changed).
  std::optional<api::VMClassStatus> last_written;
  {
    const std::lock_guard lock(written_mutex_);
    auto it = last_written_.find(vm_class->metadata.name);
    if (it != last_written_.end()) last_written = it->second;
  }
  if (!classStatusWriteNeeded(wanted, vm_class->status, last_written ? &*last_written : nullptr))
    return runtime::Result::requeueAfter(kClassResync);
  // A condition keeps its lastTransitionTime while its status stays.
  for (auto& condition : wanted.conditions) {
    condition.last_transition_time = runtime::rfc3339Now();
    for (const auto& existing : vm_class->status.conditions) {
      if (existing.type == condition.type && existing.status == condition.status &&
          !existing.last_transition_time.empty())
        condition.last_transition_time = existing.last_transition_time;
    }
  }
  api::VMClass patch;
  patch.metadata.name = vm_class->metadata.name;
  patch.status = std::move(wanted);
  auto encoded = json::parse(api::toJson(patch), "VMClass status");
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember("kind", "VMClass", a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::stringValue(patch.metadata.name, a), a);
  body.AddMember("metadata", metadata, a);
  rapidjson::Value status(encoded["status"], a);
  // Encoding leaves out empty values; an empty list must still replace the old one.
  if (!status.HasMember("providers")) {
    status.AddMember("providers", rapidjson::Value(rapidjson::kArrayType), a);
  }
  if (!status.HasMember("providerCount")) status.AddMember("providerCount", 0, a);
  body.AddMember("status", status, a);
  auto applied =
      client_.apply(resources::kVMClass, "", patch.metadata.name, json::serialize(body),
                    {.field_manager = kFieldManager, .force = true, .subresource = "status"});
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  {
    const std::lock_guard lock(written_mutex_);
    last_written_[patch.metadata.name] = patch.status;
  }
  return runtime::Result::requeueAfter(kClassResync);
}

}  // namespace banlieue::controller
