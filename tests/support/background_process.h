// A child process a test starts and stops itself (a provider, a leader-election candidate),
// with stdout and stderr captured to a file the test can read while it runs. The destructor
// kills what is still running, so a failed assertion never leaks a process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace banlieue::testing {

class BackgroundProcess {
 public:
  // argv[0] is the executable's path; `extra_env` entries (KEY=VALUE) are added to ours.
  explicit BackgroundProcess(std::vector<std::string> argv,
                             std::vector<std::string> extra_env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::string output() const;
  // Sends `signal` and waits for the exit; returns the exit code (128 + signal when killed).
  int stop(int signal);
  // SIGTERM, then SIGKILL when it has not exited after `grace`; returns the exit code.
  int terminate(std::chrono::seconds grace = std::chrono::seconds(15));
  // True (and the exit code set) once the process has exited on its own.
  bool exited(int* exit_code = nullptr);

 private:
  std::filesystem::path output_;
  pid_t pid_ = -1;
};

}  // namespace banlieue::testing
