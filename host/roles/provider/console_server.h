// The provider's console server (docs/adr/0040): people reach a machine's console through the
// provider, which alone holds the backend's credentials. It listens on loopback inside the pod
// by default, so the only way in is the apiserver's pods/portforward (`banlieue vm console`),
// and only while this process leads: it runs inside the leader's work, beside the reconcilers.
//
// A connection says who it is and which VM it wants (console_access.h); the server checks the
// token (TokenReview) and the permission (SubjectAccessReview on virtualmachines/console), finds
// the machine the VM runs on, opens the console through the plugin (ABI 1.3) and then copies
// bytes both ways until either side ends, the person is idle for too long, or leadership goes.
// An Event on the VirtualMachine records who opened it and, when it closes, for how long and how
// many bytes went each way; never what they were. A ticket console ("webmks", vSphere's) does
// not stream: the server answers its URL in the verdict line and closes; the URL is a
// credential, in no log line and no Event.
#pragma once

#include "host/roles/provider/runtime_context.h"
#include "host/roles/provider/snapshot_reconciler.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace banlieue::roles::provider {

struct ConsoleServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;                             // 0: any free port
  std::chrono::seconds idle_timeout{3600};  // no input from the person for this long ends it
  std::chrono::seconds hello_timeout{10};   // the first line must arrive within this
};

class ConsoleServer {
 public:
  ConsoleServer(RuntimeContext& context, MachineDirectory machines, ConsoleServerOptions options);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  // Binds and listens; FailedPrecondition (reason ConsolePortUnavailable) when it cannot.
  Status listen();
  int port() const { return port_; }
  // Serves connections, each on its own thread, until `stop` (or the context's stopping); returns
  // once every session has ended.
  void run(const std::atomic<bool>& stop);
  // Sessions open right now.
  int sessions() const { return sessions_.load(); }

 private:
  void serve(int fd, const std::atomic<bool>& stop);
  RuntimeContext& context_;
  MachineDirectory machines_;
  ConsoleServerOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> sessions_{0};
  std::mutex mu_;
  std::condition_variable ended_;
};

}  // namespace banlieue::roles::provider
