// The banlieue binary. Dispatch only: every role lives in host/roles/.
#include "host/app/cli.h"
#include "host/common/container_init.h"

int main(int argc, char** argv) {
  // In a pod without an init, banlieue is PID 1: an init of its own reaps what its plugins
  // leave behind (host/common/container_init.h).
  banlieue::common::runUnderContainerInitIfPid1();
  return banlieue::app::run(argc, argv);
}
