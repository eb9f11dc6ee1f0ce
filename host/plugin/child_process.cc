#include "host/plugin/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace banlieue::plugin {

void LineWriter::line(std::string_view text) const {
  std::string buffer(text);
  buffer.push_back('\n');
  const char* p = buffer.data();
  size_t left = buffer.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string signalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

ChildExit runForked(const std::function<int(const LineWriter&)>& child_main,
                    const std::function<std::chrono::milliseconds(std::string_view)>& on_line,
                    std::chrono::milliseconds first_wait) {
  ChildExit result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.spawn_errno = errno;
    return result;
  }
  pid_t pid = fork();
  if (pid < 0) {
    result.spawn_errno = errno;
    close(fds[0]);
    close(fds[1]);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);  // so the watchdog can kill whatever the plugin started too
    close(fds[0]);
    int code = 70;  // EX_SOFTWARE if child_main throws
    try {
      code = child_main(LineWriter(fds[1]));
    } catch (...) {
    }
    close(fds[1]);
    _exit(code);
  }
  setpgid(pid, pid);  // also from the parent, so there is no window before the child runs
  close(fds[1]);
  std::string pending;
  auto deadline = std::chrono::steady_clock::now() + first_wait;
  char chunk[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(-pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      kill(-pid, SIGKILL);
      break;
    }
    if (ready == 0) continue;  // loop re-checks the deadline
    ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done (or died)
    pending.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      auto budget = on_line(std::string_view(pending.data(), newline));
      pending.erase(0, newline + 1);
      deadline = std::chrono::steady_clock::now() + budget;
    }
  }
  close(fds[0]);
  // The pipe is closed; give the child a bounded moment to exit, then make sure it does.
  int status = 0;
  auto reap_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return result;
    if (std::chrono::steady_clock::now() >= reap_deadline) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.timed_out = true;
      break;
    }
    usleep(1000);
  }
  kill(-pid, SIGKILL);  // anything the plugin left running in its group
  if (result.timed_out) return result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace banlieue::plugin
