#include "host/roles/controller/label_selector.h"

#include <algorithm>

namespace banlieue::controller {
namespace {

bool requirementHolds(const api::LabelSelectorRequirement& requirement,
                      const api::StringMap& labels) {
  auto it = labels.find(requirement.key);
  bool present = it != labels.end();
  auto listed = [&] {
    return present && std::find(requirement.values.begin(), requirement.values.end(), it->second) !=
                          requirement.values.end();
  };
  if (requirement.operator_ == "In") return listed();
  if (requirement.operator_ == "NotIn") return !listed();
  if (requirement.operator_ == "Exists") return present;
  if (requirement.operator_ == "DoesNotExist") return !present;
  // The CRD schema restricts the operator; anything else selects nothing rather than everything.
  return false;
}

}  // namespace

bool selectorMatches(const api::LabelSelector& selector, const api::StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return std::all_of(
      selector.match_expressions.begin(), selector.match_expressions.end(),
      [&](const auto& requirement) { return requirementHolds(requirement, labels); });
}

}  // namespace banlieue::controller
