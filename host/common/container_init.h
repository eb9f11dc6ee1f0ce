// banlieue as a container's first process. A pod without an init runs banlieue as PID 1 of
// its PID namespace, and the kernel re-parents to PID 1 every process whose parent died: a
// plugin's daemonized backend process (QEMU started with -daemonize, an ssh ControlMaster)
// included. Only PID 1 can reap those; without it, each one that exits stays a zombie for as
// long as the pod lives. And PID 1 gets no default signal actions: a SIGTERM it has no
// handler for is dropped.
#pragma once

namespace banlieue::common {

// When this process is PID 1, forks once: the parent stays PID 1 as a minimal init and never
// returns. It forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the child,
// reaps every process that exits (the child and every orphan), and once the child has exited
// ends with its status (its exit code, or 128 + the signal that killed it). The child returns, with
// the signal mask and dispositions it had, and runs banlieue. Anywhere else, returns at once. Call
// it first thing in main(), before any thread exists.
void runUnderContainerInitIfPid1();

}  // namespace banlieue::common
