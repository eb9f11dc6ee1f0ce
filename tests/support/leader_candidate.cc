// A leader-election candidate as its own process, for the failover test between processes:
//   leader_candidate <kubeconfig> <namespace> <lease> <identity> <lease-ms> <renew-ms> <retry-ms>
// Prints "leading" when it starts leading, "stopped leading" when it stops and "leader: <id>"
// when it sees another holder; SIGTERM makes it stop cleanly (releasing the Lease), SIGKILL
// simulates a crash. The test chooses the timings and derives its bounds from them.
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/runtime/leader_election.h"

#include <signal.h>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  using namespace banlieue;
  if (argc != 8) {
    std::cerr << "usage: leader_candidate <kubeconfig> <namespace> <lease> <identity> "
                 "<lease-ms> <renew-ms> <retry-ms>\n";
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
  config.lease_duration = std::chrono::milliseconds(std::stoll(argv[5]));
  config.renew_deadline = std::chrono::milliseconds(std::stoll(argv[6]));
  config.retry_period = std::chrono::milliseconds(std::stoll(argv[7]));
  config.on_started_leading = [] { std::cout << "leading" << std::endl; };
  config.on_stopped_leading = [] { std::cout << "stopped leading" << std::endl; };
  config.on_new_leader = [](const std::string& holder) {
    if (!holder.empty()) std::cout << "leader: " << holder << std::endl;
  };
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
