// Namespaces that earlier tests left Terminating because an object in them still carries a
// banlieue finalizer whose process (a test's provider or controller) has stopped. Each keeps
// kube-controller-manager's namespace controller retrying its deletion, which costs the shared
// apiserver discovery and a list of every resource type per retry; dozens of them slowed every
// later test of a run. Only the finalizers banlieue puts (banlieue.io/…) are removed, and only
// from namespaces Terminating longer than any test's own clean-up waits.
#pragma once

#include "host/kube/client.h"

#include <chrono>
#include <string>

namespace banlieue::testing {

struct SweepCount {
  int namespaces = 0;  // Terminating past `older_than`
  int objects = 0;     // objects whose banlieue finalizers were removed
};

// Sweeps the namespaces Terminating for at least `older_than`; with `only`, that namespace
// alone (the sweep's own test, which must not touch other tests' namespaces).
SweepCount sweepStuckNamespaces(kube::KubeClient& client, std::chrono::seconds older_than,
                                const std::string& only = "");

}  // namespace banlieue::testing
