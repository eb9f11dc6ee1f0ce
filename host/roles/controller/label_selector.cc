#include "host/roles/controller/label_selector.h"

#include <algorithm>
#include <utility>

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

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

}  // namespace

std::string selectorText(const api::LabelSelector& selector) {
  std::vector<std::string> terms;
  for (const auto& [key, value] : selector.match_labels) {
    std::string term = key;
    term += '=';
    term += value;
    terms.push_back(std::move(term));
  }
  for (const auto& r : selector.match_expressions) {
    if (r.operator_ == "In") {
      terms.push_back(r.key + " in (" + joined(r.values) + ")");
    } else if (r.operator_ == "NotIn") {
      terms.push_back(r.key + " notin (" + joined(r.values) + ")");
    } else if (r.operator_ == "Exists") {
      terms.push_back(r.key);
    } else if (r.operator_ == "DoesNotExist") {
      terms.push_back("!" + r.key);
    } else {
      terms.push_back(r.key + " " + r.operator_ + " (" + joined(r.values) + ")");
    }
  }
  return terms.empty() ? "(empty: matches all)" : joined(terms);
}

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
