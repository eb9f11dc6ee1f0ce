// metav1.LabelSelector evaluation, as the API server does it: every matchLabels pair and every
// matchExpressions requirement must hold. An empty selector matches everything; an absent one is
// the caller's decision (the scheduler treats it as "anything").
#pragma once

#include "host/api/common.h"

namespace banlieue::controller {

bool selectorMatches(const api::LabelSelector& selector, const api::StringMap& labels);

}  // namespace banlieue::controller
