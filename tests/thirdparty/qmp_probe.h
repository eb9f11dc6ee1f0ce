// The test's own look at a QEMU, independent of the plugin's QMP client: one short QMP
// session (greeting, qmp_capabilities, one command) on the machine's socket, plus what /proc
// says about the processes of a state directory.
#pragma once

#include <banlieue/sdk/json.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace banlieue::qemu::testing {

// The "return" of `command` on the QMP socket at `socket_path`, as JSON text; throws
// std::runtime_error when QEMU does not answer within 5 s.
inline std::string qmpQuery(const std::string& socket_path, const std::string& command) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    throw std::runtime_error("cannot connect to " + socket_path);
  }
  std::string buffer;
  auto next = [&]() -> rapidjson::Document {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      auto end = buffer.find('\n');
      if (end != std::string::npos) {
        std::string line = buffer.substr(0, end);
        buffer.erase(0, end + 1);
        auto message = sdk::json::parse(line, "QMP");
        if (message.HasMember("event")) continue;
        return message;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p = {fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        throw std::runtime_error("QMP: no answer from " + socket_path);
      }
      char chunk[4096];
      ssize_t n = read(fd, chunk, sizeof(chunk));
      if (n <= 0) throw std::runtime_error("QMP: " + socket_path + " closed");
      buffer.append(chunk, static_cast<size_t>(n));
    }
  };
  auto send = [&](const std::string& line) {
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      throw std::runtime_error("QMP: cannot write to " + socket_path);
    }
  };
  try {
    next();  // greeting
    send(R"({"execute":"qmp_capabilities"})"
         "\n");
    next();
    send(R"({"execute":")" + command + "\"}\n");
    auto reply = next();
    close(fd);
    if (!reply.HasMember("return")) throw std::runtime_error("QMP " + command + " failed");
    return sdk::json::serialize(reply["return"]);
  } catch (...) {
    close(fd);
    throw;
  }
}

// The processes whose command line contains `marker` and one of whose threads still runs
// (a killed QEMU's first thread is a zombie while the others exit and still hold its disks).
inline std::vector<pid_t> processesWith(const std::string& marker) {
  auto state = [](const std::filesystem::path& stat_file) {
    std::ifstream stat(stat_file);
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() ? 'X' : text[paren + 2];
  };
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code task_ec;
    for (const auto& task : std::filesystem::directory_iterator(entry.path() / "task", task_ec)) {
      char s = state(task.path() / "stat");
      if (s == 'Z' || s == 'X') continue;
      std::ifstream in(task.path() / "cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), {});
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      if (cmdline.find(marker) != std::string::npos) pids.push_back(std::stoi(name));
      break;
    }
  }
  return pids;
}

// The command line of `pid`, arguments separated by spaces.
inline std::string commandLine(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmdline((std::istreambuf_iterator<char>(in)), {});
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline;
}

}  // namespace banlieue::qemu::testing
