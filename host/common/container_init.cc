#include "host/common/container_init.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace banlieue::common {
namespace {

// What a kubelet, a container runtime or a person sends a container's first process.
constexpr std::array<int, 6> kForwarded = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t initSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwarded) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

// A handler that does nothing: the init takes its signals with sigwait, but PID 1 of a
// namespace drops signals whose disposition is the default one before they are queued.
void noteSignal(int /*sig*/) {}

// The init's loop: `child` is banlieue. Every signal of initSignals() is blocked, with a handler.
[[noreturn]] void superviseAsInit(pid_t child) {
  const sigset_t set = initSignals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig != SIGCHLD) {
      ::kill(child, sig);
      continue;
    }
    // Several exits can share one SIGCHLD: reap until none is left.
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(-1, &status, WNOHANG);
      if (done <= 0) break;
      if (done != child) continue;  // an orphan: reaped, nothing else to do
      // What is left of the namespace goes with the init (the kernel kills it).
      if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
      ::_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
    }
  }
}

}  // namespace

void runUnderContainerInitIfPid1() {
  if (::getpid() != 1) return;
  const sigset_t set = initSignals();
  sigset_t previous_mask;
  struct sigaction previous[kForwarded.size() + 1];
  struct sigaction note {};
  note.sa_handler = noteSignal;
  sigemptyset(&note.sa_mask);
  // Blocked before the fork, so that no signal sent in between is lost.
  sigprocmask(SIG_BLOCK, &set, &previous_mask);
  for (std::size_t i = 0; i < kForwarded.size(); ++i) sigaction(kForwarded[i], &note, &previous[i]);
  sigaction(SIGCHLD, &note, &previous[kForwarded.size()]);

  const pid_t child = ::fork();
  if (child < 0) {
    // No init then: banlieue runs as PID 1 itself, as it did before this existed.
    std::perror("banlieue: fork for the container init");
  } else if (child > 0) {
    superviseAsInit(child);
  }
  for (std::size_t i = 0; i < kForwarded.size(); ++i)
    sigaction(kForwarded[i], &previous[i], nullptr);
  sigaction(SIGCHLD, &previous[kForwarded.size()], nullptr);
  sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
}

}  // namespace banlieue::common
