#include "tests/support/tinyproxy.h"

#include "tests/support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace banlieue::testing {
namespace {

bool accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

}  // namespace

TinyProxy::TinyProxy(const std::vector<int>& connect_ports, const std::string& basic_auth) {
  char dir[] = "/tmp/banlieue-tinyproxy-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  port_ = freePort();
  if (port_ == 0) throw std::runtime_error("no free loopback port for tinyproxy");
  {
    std::ofstream conf(dir_ / "tinyproxy.conf");
    conf << "Port " << port_ << "\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 30\n"
         << "MaxClients 20\nLogLevel Connect\nLogFile \"" << (dir_ / "log").string() << "\"\n";
    for (int p : connect_ports) conf << "ConnectPort " << p << "\n";
    if (!basic_auth.empty()) {
      const auto colon = basic_auth.find(':');
      conf << "BasicAuth " << basic_auth.substr(0, colon) << " " << basic_auth.substr(colon + 1)
           << "\n";
    }
  }
  process_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
      "/usr/bin/tinyproxy", "-d", "-c", (dir_ / "tinyproxy.conf").string()});
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!accepts(port_)) {
    int code = 0;
    if (process_->exited(&code) || std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error("tinyproxy did not come up on port " + std::to_string(port_) + ": " +
                               process_->output());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TinyProxy::~TinyProxy() {
  process_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string TinyProxy::url(const std::string& credentials) const {
  return "http://" + (credentials.empty() ? "" : credentials + "@") +
         "127.0.0.1:" + std::to_string(port_);
}

std::vector<std::string> TinyProxy::requests() const {
  // "CONNECT   Dec 02 07:21:16.338 [23176]: Request (file descriptor 5): CONNECT host:port ..."
  std::vector<std::string> lines;
  std::ifstream log(dir_ / "log");
  const std::string marker = "): ";
  for (std::string line; std::getline(log, line);) {
    const auto request = line.find("Request (file descriptor ");
    if (request == std::string::npos) continue;
    const auto start = line.find(marker, request);
    if (start != std::string::npos) lines.push_back(line.substr(start + marker.size()));
  }
  return lines;
}

}  // namespace banlieue::testing
