#include "bench/bench_support.h"

#include "host/kube/config.h"
#include "host/kube/http_transport.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace banlieue::bench {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::unique_ptr<kube::KubeClient> connect(const std::string& kubeconfig,
                                          kube::ClientOptions options) {
  auto connection = kube::loadKubeconfig({.files = {kubeconfig}});
  if (!connection.ok()) throw std::runtime_error(connection.status().message());
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) throw std::runtime_error(transport.status().message());
  return kube::makeKubeClient(std::move(transport).value(), options);
}

void parallel(int n, int threads, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::string failure;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        try {
          fn(i);
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          if (failure.empty()) failure = e.what();
          next = n;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace banlieue::bench
