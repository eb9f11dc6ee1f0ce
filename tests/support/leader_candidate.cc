// A leader-election candidate as its own process, for the failover test between processes:
//   leader_candidate <kubeconfig> <namespace> <lease> <identity>
// Prints "leading" when it starts leading and "stopped leading" when it stops; SIGTERM makes
// it stop cleanly (releasing the Lease), SIGKILL simulates a crash. Short timings (3 s lease,
// 2 s renew deadline, 0.5 s retry) keep the test quick.
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/runtime/leader_election.h"

#include <signal.h>

#include <atomic>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  using namespace banlieue;
  using namespace std::chrono_literals;
  if (argc != 5) {
    std::cerr << "usage: leader_candidate <kubeconfig> <namespace> <lease> <identity>\n";
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  kube::KubeconfigOptions options;
  options.files = {argv[1]};
  auto connection = kube::loadKubeconfig(options);
  if (!connection.ok()) {
    std::cerr << connection.status().message() << "\n";
    return 1;
  }
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) {
    std::cerr << transport.status().message() << "\n";
    return 1;
  }
  auto client = kube::makeKubeClient(std::move(transport).value());
  runtime::LeaderElectionConfig config;
  config.lease_namespace = argv[2];
  config.lease_name = argv[3];
  config.identity = argv[4];
  config.lease_duration = 3s;
  config.renew_deadline = 2s;
  config.retry_period = 500ms;
  config.on_started_leading = [] { std::cout << "leading" << std::endl; };
  config.on_stopped_leading = [] { std::cout << "stopped leading" << std::endl; };
  runtime::LeaderElector elector(*client, config);

  std::atomic<bool> stop{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });
  while (!stop) elector.run(stop);  // campaign again after losing the lease
  signal_thread.join();
  return 0;
}
