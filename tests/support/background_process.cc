#include "tests/support/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace banlieue::testing {
namespace {

int exitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

BackgroundProcess::BackgroundProcess(std::vector<std::string> argv,
                                     std::vector<std::string> extra_env) {
  static std::atomic<int> counter{0};
  output_ = std::filesystem::temp_directory_path() / ("banlieue-test-" + std::to_string(getpid()) +
                                                      "-" + std::to_string(counter++) + ".out");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (auto& e : extra_env) env_strings.push_back(std::move(e));
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), env.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) stop(SIGKILL);
  std::error_code ec;
  std::filesystem::remove(output_, ec);
}

std::string BackgroundProcess::output() const {
  std::ifstream in(output_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int BackgroundProcess::stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return exitCode(status);
}

int BackgroundProcess::terminate(std::chrono::seconds grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  int code = -1;
  while (!exited(&code)) {
    if (std::chrono::steady_clock::now() > deadline) return stop(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return code;
}

bool BackgroundProcess::exited(int* exit_code) {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  if (exit_code != nullptr) *exit_code = exitCode(status);
  return true;
}

}  // namespace banlieue::testing
