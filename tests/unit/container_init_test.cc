// banlieue as PID 1 (host/common/container_init.h), in a PID namespace of the test's own: the
// init reaps an orphan that exits, forwards a SIGTERM sent to PID 1, and ends with the status
// of the process that runs banlieue.
#include "host/common/container_init.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

namespace banlieue::common {
namespace {

using namespace std::chrono_literals;

volatile std::sig_atomic_t g_terminated = 0;
void onTerm(int /*sig*/) {
  g_terminated = 1;
}

// What runs as "banlieue" under the init (PID 2 of the namespace). Exit codes: 42 when the
// orphan was reaped and SIGTERM sent to PID 1 came here; other values say what failed.
[[noreturn]] void banlieueUnderTheInit() {
  if (::getpid() == 1) ::_exit(10);   // the init did not fork
  if (::getppid() != 1) ::_exit(11);  // not the init's child
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) ::_exit(12);
  // An orphan: its parent exits at once, so it is re-parented to PID 1, and exits 100 ms later.
  const pid_t parent = ::fork();
  if (parent == 0) {
    const pid_t orphan = ::fork();
    if (orphan == 0) {
      std::this_thread::sleep_for(100ms);
      ::_exit(0);
    }
    ::write(pipe_fds[1], &orphan, sizeof orphan);
    ::_exit(0);
  }
  pid_t orphan = 0;
  if (::waitpid(parent, nullptr, 0) != parent) ::_exit(13);
  if (::read(pipe_fds[0], &orphan, sizeof orphan) != sizeof orphan) ::_exit(14);
  // Reaped: gone, not a zombie (kill(pid, 0) succeeds on a zombie).
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    std::this_thread::sleep_for(20ms);
    reaped = ::kill(orphan, 0) != 0 && errno == ESRCH;
  }
  if (!reaped) ::_exit(15);
  // What a kubelet does to stop a container: SIGTERM to its PID 1.
  std::signal(SIGTERM, onTerm);
  if (::kill(1, SIGTERM) != 0) ::_exit(16);
  for (int i = 0; i < 100 && g_terminated == 0; ++i) std::this_thread::sleep_for(20ms);
  ::_exit(g_terminated != 0 ? 42 : 17);
}

// Runs `body` as PID 1 of a new PID namespace; its exit status as waitpid gives it.
int statusAsPid1(void (*body)()) {
  const pid_t outer = ::fork();
  if (outer == 0) {
    if (::unshare(CLONE_NEWPID) != 0) ::_exit(2);
    const pid_t first = ::fork();  // PID 1 of the new namespace
    if (first == 0) {
      body();
      ::_exit(3);
    }
    int status = 0;
    if (::waitpid(first, &status, 0) != first) ::_exit(4);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  int status = 0;
  ::waitpid(outer, &status, 0);
  return status;
}

TEST(ContainerInitTest, AsPid1ItReapsOrphansForwardsSigtermAndEndsWithBanlieuesStatus) {
  ASSERT_EQ(::geteuid(), 0u) << "a PID namespace needs root (CAP_SYS_ADMIN)";
  const int status = statusAsPid1([] {
    runUnderContainerInitIfPid1();
    banlieueUnderTheInit();
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42)
      << "10: no fork; 11: not the init's child; 15: the orphan stayed a zombie; "
         "17: SIGTERM to PID 1 was not forwarded";
}

TEST(ContainerInitTest, ASignalThatKillsBanlieueIsTheContainersStatus) {
  ASSERT_EQ(::geteuid(), 0u) << "a PID namespace needs root (CAP_SYS_ADMIN)";
  const int status = statusAsPid1([] {
    runUnderContainerInitIfPid1();
    std::signal(SIGUSR1, SIG_DFL);
    ::kill(::getpid(), SIGUSR1);
    ::_exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGUSR1);
}

TEST(ContainerInitTest, AnywhereButPid1ItReturnsWithoutForking) {
  const pid_t self = ::getpid();
  runUnderContainerInitIfPid1();
  EXPECT_EQ(::getpid(), self);
}

}  // namespace
}  // namespace banlieue::common
