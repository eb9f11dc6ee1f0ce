#include "host/roles/controller/cluster_aggregate.h"

#include "host/api/codec.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/label_selector.h"
#include "host/roles/controller/scheduler.h"
#include "host/roles/controller/status_mirror.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <set>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;

std::string encodeStatus(const api::InfraClusterStatus& status) {
  api::InfraCluster holder;
  holder.status = status;
  auto doc = json::parse(api::toJson(holder), "cluster status");
  const auto* encoded = json::find(&doc, "status");
  return encoded == nullptr ? std::string("{}") : json::serialize(*encoded);
}

}  // namespace

std::vector<const api::Provider*> selectedProviders(const api::InfraCluster& cluster,
                                                    const std::vector<api::Provider>& providers,
                                                    std::vector<std::string>* missing) {
  std::vector<const api::Provider*> selected;
  if (!cluster.spec.provider_refs.empty()) {
    for (const auto& ref : cluster.spec.provider_refs) {
      auto it = std::find_if(providers.begin(), providers.end(),
                             [&](const auto& p) { return p.metadata.name == ref.name; });
      if (it != providers.end()) {
        selected.push_back(&*it);
      } else if (missing != nullptr) {
        missing->push_back(ref.name);
      }
    }
    return selected;
  }
  for (const auto& provider : providers) {
    if (!cluster.spec.provider_selector ||
        selectorMatches(*cluster.spec.provider_selector, provider.metadata.labels))
      selected.push_back(&provider);
  }
  std::sort(selected.begin(), selected.end(),
            [](const auto* a, const auto* b) { return a->metadata.name < b->metadata.name; });
  return selected;
}

std::vector<FailureDomainSource> advertisedFailureDomains(
    const api::InfraCluster& cluster, const std::vector<api::Provider>& providers,
    std::vector<std::string>* missing, std::vector<std::string>* duplicates) {
  std::vector<FailureDomainSource> out;
  std::set<std::string> names;
  for (const auto* provider : selectedProviders(cluster, providers, missing)) {
    for (const auto& fd : provider->status.failure_domains) {
      if (names.insert(fd.name).second) {
        out.push_back({provider, &fd});
      } else if (duplicates != nullptr) {
        duplicates->push_back(provider->metadata.name + "/" + fd.name);
      }
    }
  }
  return out;
}

FailureDomainSource failureDomainSource(const api::InfraCluster& cluster,
                                        const std::vector<api::Provider>& providers,
                                        const std::string& name) {
  for (const auto& source : advertisedFailureDomains(cluster, providers)) {
    if (source.failure_domain->name == name) return source;
  }
  return {};
}

api::InfraClusterStatus aggregateCluster(const api::InfraCluster& cluster,
                                         const std::vector<api::Provider>& providers,
                                         const std::string& now) {
  api::InfraClusterStatus status = cluster.status;
  const int64_t generation = cluster.metadata.generation;
  status.observed_generation = generation;
  status.control_plane_endpoint = cluster.spec.control_plane_endpoint;
  removeCondition(status.conditions, conditions::kPaused);
  if (cluster.spec.paused) {
    setCondition(status.conditions, conditions::kPaused, "True", "Paused",
                 "reconciliation paused via spec.paused", generation, now);
    setCondition(status.conditions, conditions::kReady, "False", "Paused",
                 "reconciliation paused via spec.paused", generation, now);
    return status;
  }

  std::vector<std::string> missing;
  std::vector<std::string> duplicates;
  const size_t selected = selectedProviders(cluster, providers).size();
  status.failure_domains.clear();
  for (const auto& source : advertisedFailureDomains(cluster, providers, &missing, &duplicates)) {
    const auto& fd = *source.failure_domain;
    api::ClusterFailureDomain out;
    out.name = fd.name;
    const auto& selector = cluster.spec.control_plane_failure_domain_selector;
    out.control_plane = !selector || selectorMatches(*selector, fd.labels);
    out.attributes = fd.labels;
    for (const auto& [key, value] : fd.attributes.raw) out.attributes[key] = value;
    status.failure_domains.push_back(std::move(out));
  }
  status.initialization = api::InitializationStatus{.provisioned = !status.failure_domains.empty()};

  std::string notes;
  if (!missing.empty()) notes += "; providerRefs not found: " + joinCapped(missing);
  if (!duplicates.empty())
    notes += "; duplicate failure-domain names skipped: " + joinCapped(duplicates);
  if (status.failure_domains.empty()) {
    setCondition(status.conditions, conditions::kReady, "False", "NoFailureDomains",
                 "no ready failure domains from the selected providers" + notes, generation, now);
  } else {
    setCondition(status.conditions, conditions::kReady, "True", "Reconciled",
                 "aggregated " + std::to_string(status.failure_domains.size()) +
                     " failure domain(s) from " + std::to_string(selected) + " provider(s)" + notes,
                 generation, now);
  }
  return status;
}

runtime::Result ClusterReconciler::reconcile(const runtime::Request& request) {
  using namespace std::chrono_literals;
  std::string key = request.key();
  if (!expectations_.satisfied(key)) return runtime::Result::requeueAfter(250ms);
  auto object = clusters_.get(key);
  if (!object) return runtime::Result::done();
  auto cluster = api::fromJson<api::InfraCluster>(json::serialize(*object));
  if (!cluster.ok()) return runtime::Result::terminal(cluster.status());
  std::vector<api::Provider> providers;
  for (const auto& p : providers_.byIndex("namespace", cluster->metadata.namespace_)) {
    auto provider = api::fromJson<api::Provider>(json::serialize(*p));
    if (provider.ok()) providers.push_back(std::move(provider).value());
  }
  auto status = aggregateCluster(*cluster, providers, runtime::rfc3339Now());
  if (encodeStatus(status) == encodeStatus(cluster->status)) return runtime::Result::done();
  api::InfraCluster body;
  body.api_version = type_.apiVersion();
  body.kind = json::stringOr(object.get(), "kind", "VSphereCluster");
  body.metadata.name = cluster->metadata.name;
  body.metadata.namespace_ = cluster->metadata.namespace_;
  body.status = status;
  auto doc = json::parse(api::toJson(body), "cluster status");
  doc.RemoveMember("spec");
  auto applied =
      client_.apply(type_, body.metadata.namespace_, body.metadata.name, json::serialize(doc),
                    {.field_manager = kFieldManager, .force = true, .subresource = "status"});
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  expectations_.expect(key, &clusters_, key, json::stringOr(&*applied, "metadata.resourceVersion"));
  return runtime::Result::done();
}

}  // namespace banlieue::controller
