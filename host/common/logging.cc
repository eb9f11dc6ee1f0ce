#include "host/common/logging.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <mutex>

namespace banlieue::common {
namespace {

// One JSON object per line: {"ts","level","logger","msg"}; the message is escaped properly,
// which a pattern string cannot do.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(msg.time);
    auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time - seconds).count();
    std::time_t t = std::chrono::system_clock::to_time_t(msg.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    std::string line =
        fmt::format(R"({{"ts":"{}.{:03d}Z","level":"{}","logger":"{}","msg":"{}"}})", stamp, millis,
                    spdlog::level::to_string_view(msg.level),
                    jsonEscape(std::string_view(msg.logger_name.data(), msg.logger_name.size())),
                    jsonEscape(std::string_view(msg.payload.data(), msg.payload.size())));
    line.push_back('\n');
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

std::mutex& loggerMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

std::string jsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view text) {
  for (int i = spdlog::level::trace; i <= spdlog::level::off; ++i) {
    auto level = static_cast<spdlog::level::level_enum>(i);
    if (text == spdlog::level::to_string_view(level)) return level;
  }
  if (text == "warn" || text == "warning") return spdlog::level::warn;
  if (text == "error") return spdlog::level::err;
  return std::nullopt;
}

std::optional<LogFormat> parseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return std::nullopt;
}

void configureLogging(spdlog::level::level_enum level, LogFormat format) {
  std::lock_guard lock(loggerMutex());
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (format == LogFormat::kJson) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %n: %v");
  }
  auto root = std::make_shared<spdlog::logger>("banlieue", sink);
  root->set_level(level);
  spdlog::drop_all();
  spdlog::set_default_logger(root);
  spdlog::set_level(level);
}

std::shared_ptr<spdlog::logger> logger(const std::string& name) {
  std::lock_guard lock(loggerMutex());
  if (auto existing = spdlog::get(name)) return existing;
  auto root = spdlog::default_logger();
  auto child = std::make_shared<spdlog::logger>(name, root->sinks().begin(), root->sinks().end());
  child->set_level(root->level());
  spdlog::register_logger(child);
  return child;
}

}  // namespace banlieue::common
