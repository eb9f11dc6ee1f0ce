#include "backend_config.h"

#include <banlieue/sdk/status.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace qemu_provider {
namespace {

using banlieue::sdk::Code;
using banlieue::sdk::Error;

constexpr std::string_view kScheme = "qemu://";

Error invalidEndpoint(const std::string& message) {
  return Error(Code::kInvalidArgument, "InvalidEndpoint", message);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::filesystem::path absoluteBinary(const std::string& key, const std::string& value) {
  if (value.empty() || value.front() != '/') {
    throw invalidEndpoint(key + " must be an absolute path, got '" + value + "'");
  }
  return value;
}

}  // namespace

BackendConfig BackendConfig::parse(const std::string& endpoint) {
  if (endpoint.rfind(kScheme, 0) != 0) {
    throw invalidEndpoint("spec.connection.endpoint must be qemu:///<state directory>, got '" +
                          endpoint + "'");
  }
  std::string rest = endpoint.substr(kScheme.size());
  BackendConfig config;
  if (auto q = rest.find('?'); q != std::string::npos) {
    for (const auto& option : split(rest.substr(q + 1), '&')) {
      auto eq = option.find('=');
      std::string key = option.substr(0, eq);
      std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
      if (key == "accel") {
        if (value != "kvm" && value != "tcg" && value != "auto") {
          throw invalidEndpoint("accel must be kvm, tcg or auto, got '" + value + "'");
        }
        config.accel_requested = value;
      } else if (key == "qemu") {
        config.qemu = absoluteBinary(key, value);
      } else if (key == "qemuImg") {
        config.qemu_img = absoluteBinary(key, value);
      } else if (key == "powerdownSeconds") {
        if (value.empty() || value.size() > 4 ||
            value.find_first_not_of("0123456789") != std::string::npos) {
          throw invalidEndpoint("powerdownSeconds must be a number of seconds, got '" + value +
                                "'");
        }
        config.powerdown_grace = std::chrono::seconds(std::stoi(value));
      } else {
        throw invalidEndpoint(
            "the endpoint options are accel, qemu, qemuImg and powerdownSeconds, got '" + option +
            "'");
      }
    }
    rest.resize(q);
  }
  // qemu:///dir has an empty authority: the backend is on this host, never another one.
  if (rest.empty() || rest.front() != '/') {
    throw invalidEndpoint(
        "spec.connection.endpoint must name a local directory, qemu:///<dir>, got '" + endpoint +
        "'");
  }
  // QEMU's option syntax separates with commas: a path holding one would split a -drive.
  if (rest.find(',') != std::string::npos) {
    throw invalidEndpoint("the state directory must not contain ',', got '" + rest + "'");
  }
  config.state_dir = std::filesystem::path(rest).lexically_normal();
  return config;
}

void BackendConfig::resolve() {
  std::error_code ec;
  std::filesystem::create_directories(state_dir / "machines", ec);
  if (!std::filesystem::is_directory(state_dir / "machines", ec) ||
      access(state_dir.c_str(), W_OK) != 0 || access((state_dir / "machines").c_str(), W_OK) != 0) {
    throw Error(Code::kUnavailable, "StateDirUnreachable",
                "the state directory " + state_dir.string() + " cannot be made or is not writable");
  }
  for (const auto& binary : {qemu, qemu_img}) {
    if (access(binary.c_str(), X_OK) != 0) {
      throw Error(Code::kFailedPrecondition, "QemuNotFound",
                  binary.string() +
                      " is not an executable (install qemu-system-x86 and "
                      "qemu-utils, or name the binaries in the endpoint)");
    }
  }
  // KVM needs read-write access to /dev/kvm (root or the kvm group); opening it is the test.
  int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  std::string why = fd < 0 ? std::strerror(errno) : "";
  if (fd >= 0) close(fd);
  if (accel_requested == "kvm" && fd < 0) {
    throw Error(Code::kFailedPrecondition, "AccelUnavailable",
                "accel=kvm, but /dev/kvm cannot be opened read-write: " + why +
                    " (use accel=tcg or accel=auto)");
  }
  if (accel_requested == "tcg") {
    accel = "tcg";
  } else {
    accel = fd >= 0 ? "kvm" : "tcg";
  }
}

}  // namespace qemu_provider
