// metav1.LabelSelector evaluation, as the API server does it: every matchLabels pair and every
// matchExpressions requirement must hold. An empty selector matches everything; an absent one is
// the caller's decision (the scheduler treats it as "anything").
#pragma once

#include "host/api/common.h"

namespace banlieue::controller {

bool selectorMatches(const api::LabelSelector& selector, const api::StringMap& labels);

// The selector in the text syntax `kubectl get -l` takes ("a=1,k in (x,y),!gone"), for
// messages that tell a user what was asked for.
std::string selectorText(const api::LabelSelector& selector);

}  // namespace banlieue::controller
