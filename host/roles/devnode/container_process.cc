#include "host/roles/devnode/container_process.h"

#include "host/roles/devnode/private_dev.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace banlieue::roles::devnode {
namespace {

// Only async-signal-safe calls between fork() and exec(): everything is prepared before.
[[noreturn]] void childFail(const char* what) {
  int saved = errno;
  const char* prefix = "banlieue devnode: cannot start container: ";
  (void)!write(2, prefix, strlen(prefix));
  (void)!write(2, what, strlen(what));
  const char* detail = strerror(saved);  // glibc's table lookup does not allocate
  (void)!write(2, ": ", 2);
  (void)!write(2, detail, strlen(detail));
  (void)!write(2, "\n", 1);
  _exit(127);
}

// mkdir -p on a writable copy of the path (no allocation).
void makeDirectories(char* path) {
  for (char* p = path + 1; *p != '\0'; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  mkdir(path, 0755);
}

bool isDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

StatusOr<pid_t> launchContainer(const LaunchSpec& spec) {
  if ((!spec.mounts.empty() || !spec.termination_path.empty()) && geteuid() != 0) {
    return error(Code::kFailedPrecondition, "MountNamespaceUnavailable",
                 "the container mounts volumes or a termination message file, and the node agent "
                 "needs root to create a mount namespace for them");
  }
  // Everything the child needs, built before fork().
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  struct PreparedMount {
    std::string source;
    std::vector<char> target;  // mutable for makeDirectories
    std::vector<char> parent;  // for file mounts: the directory to create
    bool file = false;
    bool read_only = false;
  };
  std::vector<PreparedMount> mounts;
  // The termination file: in a private /dev when it lives there (the node's /dev is left
  // alone), otherwise mounted like a volume's file.
  std::vector<BindMount> bind_mounts = spec.mounts;
  std::optional<PrivateDevPlan> private_dev;
  if (!spec.termination_path.empty()) {
    std::filesystem::path target(spec.termination_path);
    if (target.parent_path() == "/dev") {
      auto plan = planPrivateDev(spec.termination_file.string() + ".dev", spec.termination_file,
                                 target.filename().string());
      if (!plan.ok()) return plan.status();
      private_dev = std::move(*plan);
    } else {
      bind_mounts.push_back({spec.termination_file.string(), spec.termination_path, false});
    }
  }
  for (const auto& m : bind_mounts) {
    PreparedMount p;
    p.source = m.source;
    p.target.assign(m.target.begin(), m.target.end());
    p.target.push_back('\0');
    p.file = !isDirectory(m.source);
    std::string parent = std::filesystem::path(m.target).parent_path().string();
    p.parent.assign(parent.begin(), parent.end());
    p.parent.push_back('\0');
    p.read_only = m.read_only;
    mounts.push_back(std::move(p));
  }
  std::string log = spec.log_file.string();

  pid_t pid = fork();
  if (pid < 0) {
    return error(Code::kResourceExhausted, "ForkFailed",
                 std::string("cannot fork a container process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setsid();
    // The agent blocks its stop signals in every thread; a container must receive them.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0640);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    // The agent's sockets and files must not leak into the container.
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
      for (int fd = 3; fd < 4096; ++fd) close(fd);
    }
    if (!mounts.empty() || private_dev) {
      if (unshare(CLONE_NEWNS) != 0) childFail("unshare(CLONE_NEWNS)");
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        childFail("making / private");
      }
      for (auto& m : mounts) {
        if (m.file) {
          makeDirectories(m.parent.data());
          int fd = open(m.target.data(), O_WRONLY | O_CREAT, 0644);  // a mount point
          if (fd >= 0) close(fd);
        } else {
          makeDirectories(m.target.data());
        }
        if (mount(m.source.c_str(), m.target.data(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
          childFail(m.target.data());
        }
        if (m.read_only && mount(nullptr, m.target.data(), nullptr,
                                 MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
          childFail(m.target.data());
        }
      }
      if (private_dev) {
        if (const char* failed = applyPrivateDev(*private_dev)) childFail(failed);
      }
    }
    if (chdir(spec.working_dir.c_str()) != 0) childFail(spec.working_dir.c_str());
    execve(spec.executable.c_str(), argv.data(), envp.data());
    childFail(spec.executable.c_str());
  }
  return pid;
}

std::optional<int> pollExit(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) return 255;  // not our child any more: treat as ended
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return std::nullopt;
}

void signalContainer(pid_t pid, int signal) {
  if (pid > 0) kill(-pid, signal);
}

}  // namespace banlieue::roles::devnode
