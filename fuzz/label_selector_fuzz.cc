// Label selectors as the controller evaluates them: a YAML stream of objects (a
// VirtualMachine, its VMClass and VMImage, Providers, sibling VMs), decoded with the API codecs
// and scheduled, so every providerSelector, failureDomainSelector and anti-affinity selector
// meets the labels of every Provider, failure domain and sibling. Any bytes must give a
// placement or a reasoned refusal, never a crash. Properties: the empty selector matches every
// label set, `In ()` matches none, a selector matches the labels it names; the scheduler is
// deterministic.
#include "host/api/codec.h"
#include "host/api/yaml.h"
#include "host/roles/controller/label_selector.h"
#include "host/roles/controller/scheduler.h"

#include <banlieue/sdk/json.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace banlieue;

void checkSelector(const api::LabelSelector& selector, const std::vector<api::StringMap>& sets) {
  for (const auto& labels : sets) {
    if (!controller::selectorMatches(api::LabelSelector{}, labels)) std::abort();
    // An expression that can never hold makes any selector fail.
    api::LabelSelector impossible = selector;
    impossible.match_expressions.push_back({.key = "k", .operator_ = "In", .values = {}});
    if (controller::selectorMatches(impossible, labels)) std::abort();
  }
  api::LabelSelector exact;
  exact.match_labels = selector.match_labels;
  if (!controller::selectorMatches(exact, selector.match_labels)) std::abort();
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto documents = api::parseYamlDocuments(text, "fuzz.yaml");
  if (!documents.ok()) return 0;
  std::optional<api::VirtualMachine> vm;
  std::optional<api::VMClass> vm_class;
  std::optional<api::VMImage> image;
  controller::SchedulingInput input;
  for (const auto& document : *documents) {
    const std::string json = api::serializeJson(document);
    const std::string kind = sdk::json::stringOr(&document, "kind");
    if (kind == "VirtualMachine") {
      auto decoded = api::fromJson<api::VirtualMachine>(json);
      if (!decoded.ok()) continue;
      if (!vm) vm = *decoded;
      input.siblings.push_back(std::move(*decoded));
    } else if (kind == "VMClass") {
      if (auto decoded = api::fromJson<api::VMClass>(json); decoded.ok()) vm_class = *decoded;
    } else if (kind == "VMImage") {
      if (auto decoded = api::fromJson<api::VMImage>(json); decoded.ok()) image = *decoded;
    } else if (kind == "Provider") {
      auto decoded = api::fromJson<api::Provider>(json);
      if (decoded.ok()) input.providers.push_back(std::move(*decoded));
    }
  }
  if (!vm) return 0;

  std::vector<api::StringMap> label_sets;
  for (const auto& provider : input.providers) {
    label_sets.push_back(provider.metadata.labels);
    for (const auto& fd : provider.status.failure_domains) label_sets.push_back(fd.labels);
  }
  for (const auto& sibling : input.siblings) label_sets.push_back(sibling.metadata.labels);
  const auto& placement = vm->spec.placement;
  if (placement.provider_selector) checkSelector(*placement.provider_selector, label_sets);
  if (placement.failure_domain_selector) {
    checkSelector(*placement.failure_domain_selector, label_sets);
  }
  for (const auto& term : placement.anti_affinity) checkSelector(term.label_selector, label_sets);

  if (!vm_class || !image) return 0;
  input.vm = &*vm;
  input.vm_class = &*vm_class;
  input.image = &*image;
  auto first = controller::schedule(input);
  auto second = controller::schedule(input);
  if (first.scheduled != second.scheduled || first.reason != second.reason ||
      first.message != second.message ||
      first.placement.provider_name != second.placement.provider_name ||
      first.placement.failure_domain != second.placement.failure_domain) {
    std::abort();
  }
  if (!first.scheduled && first.reason.empty()) std::abort();
  return 0;
}
