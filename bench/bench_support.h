// What the benchmark programs share: wall time, a client for a kubeconfig, and a fan-out of
// numbered work over threads. Failures throw std::runtime_error: a benchmark that cannot do
// its work must stop rather than report a time.
#pragma once

#include "host/kube/client.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace banlieue::bench {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d);

// A client for the kubeconfig file; `options` sets its client-side rate limit.
std::unique_ptr<kube::KubeClient> connect(const std::string& kubeconfig,
                                          kube::ClientOptions options);

// Runs fn(i) for i in [0, n) on `threads` threads; the first exception stops every thread and
// is rethrown once all have stopped.
void parallel(int n, int threads, const std::function<void(int)>& fn);

}  // namespace banlieue::bench
