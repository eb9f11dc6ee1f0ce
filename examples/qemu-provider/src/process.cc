#include "process.h"

#include <banlieue/sdk/status.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

extern char** environ;

namespace qemu_provider {
namespace {

using banlieue::sdk::Code;
using banlieue::sdk::Error;
using std::chrono::milliseconds;

constexpr size_t kMaxOutput = 4096;

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

// A pidfd of `pid`, or -1 where the kernel has none (before 5.3): callers then poll /proc.
int pidfdOpen(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, Deadline deadline) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw Error(Code::kUnavailable, "SpawnFailed", std::string("pipe: ") + std::strerror(errno));
  }
  Fd read_end(pipe_fds[0]);
  const int write_end = pipe_fds[1];  // closed as soon as the child holds it
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end, 1);
  posix_spawn_file_actions_adddup2(&actions, write_end, 2);
  // The host's own descriptors (its sockets, its plugin files) must not live on in a QEMU
  // that outlives the provider process.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(write_end);
  if (rc != 0) {
    throw Error(Code::kUnavailable, "SpawnFailed",
                "cannot run " + argv[0] + ": " + std::strerror(rc));
  }

  ProcessResult result;
  Fd pidfd(pidfdOpen(pid));
  bool exited = false;
  int status = 0;
  bool eof = false;
  while (!eof || !exited) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (exited && eof) break;
    if (remainingMs(deadline) == 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[2] = {{read_end.get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
    // Without a pidfd, wake up now and then to look at the child.
    int timeout = pidfd.get() >= 0 ? remainingMs(deadline) : std::min(remainingMs(deadline), 20);
    int nfds = exited || pidfd.get() < 0 ? 1 : 2;
    if (eof) {
      fds[0].fd = -1;
    }
    if (poll(fds, nfds, timeout) < 0 && errno != EINTR) break;
    if (!eof && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[1024];
      ssize_t n = read(read_end.get(), buf, sizeof(buf));
      if (n <= 0) {
        eof = true;
      } else if (result.output.size() < kMaxOutput) {
        result.output.append(buf, std::min<size_t>(n, kMaxOutput - result.output.size()));
      }
    }
    // The child exited while a grandchild (a daemonized QEMU) may still hold the pipe: stop
    // reading once nothing more is waiting.
    if (exited && !eof) {
      pollfd again = {read_end.get(), POLLIN, 0};
      if (poll(&again, 1, 0) == 0) eof = true;
    }
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  while (!result.output.empty() && (result.output.back() == '\n' || result.output.back() == ' ')) {
    result.output.pop_back();
  }
  return result;
}

namespace {

// A /proc file's text, empty when it cannot be read. A process may exit between the listing
// of /proc and the read: the read then fails with ESRCH, which libstdc++'s filebuf reports by
// throwing from underflow (seen in a clean-clone run of qemu_lifecycle_test).
std::string procText(const std::filesystem::path& file) {
  try {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  } catch (const std::exception&) {
    return {};
  }
}

// The state letter of /proc/.../stat, which follows the command name's closing parenthesis.
char taskState(const std::filesystem::path& stat_file) {
  const std::string text = procText(stat_file);
  auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return 'X';
  return text[paren + 2];
}

std::string commandLineOf(const std::filesystem::path& task) {
  std::string text = procText(task / "cmdline");
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

}  // namespace

// A process is alive while any of its threads is. A killed multi-threaded QEMU shows its first
// thread as a zombie, with an empty command line, while the others are still exiting and still
// hold its files (and with them the disk images' locks): so every thread is asked, and the
// command line is read from one that still runs.
bool processMatches(pid_t pid, const std::string& marker) {
  if (pid <= 0) return false;
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    char state = taskState(task.path() / "stat");
    if (state == 'Z' || state == 'X') continue;
    return commandLineOf(task.path()).find(marker) != std::string::npos;
  }
  return false;
}

bool waitForExit(pid_t pid, Deadline deadline) {
  Fd pidfd(pidfdOpen(pid));
  if (pidfd.get() < 0) {
    // No pidfd: the process is gone already (ESRCH) or the kernel is older than 5.3.
    while (kill(pid, 0) == 0 && remainingMs(deadline) > 0) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return kill(pid, 0) != 0;
  }
  pollfd fd = {pidfd.get(), POLLIN, 0};
  while (true) {
    int rc = poll(&fd, 1, remainingMs(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::optional<pid_t> readPidFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

std::vector<pid_t> processesWith(const std::string& marker) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid != getpid() && processMatches(pid, marker)) pids.push_back(pid);
  }
  return pids;
}

}  // namespace qemu_provider
