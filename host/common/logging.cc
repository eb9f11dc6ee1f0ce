#include "host/common/logging.h"

#include "host/common/log_context.h"

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

// One JSON object per line: {"ts","level","logger","msg"}, and within a reconcile the keys of
// its object ("controller","namespace","name","reconcileID"); the message is escaped properly,
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
        fmt::format(R"({{"ts":"{}.{:03d}Z","level":"{}","logger":"{}","msg":"{}")", stamp, millis,
                    spdlog::level::to_string_view(msg.level),
                    jsonEscape(std::string_view(msg.logger_name.data(), msg.logger_name.size())),
                    jsonEscape(std::string_view(msg.payload.data(), msg.payload.size())));
    if (const LogContext* context = currentLogContext()) {
      line += fmt::format(R"(,"controller":"{}")", jsonEscape(context->controller));
      if (!context->namespace_.empty()) {
        line += fmt::format(R"(,"namespace":"{}")", jsonEscape(context->namespace_));
      }
      line += fmt::format(R"(,"name":"{}","reconcileID":"{}")", jsonEscape(context->name),
                          jsonEscape(context->reconcile_id));
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// %* in the text pattern: " [controller ns/name reconcileID]" within a reconcile, else nothing.
class ContextFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& /*msg*/, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    const LogContext* context = currentLogContext();
    if (context == nullptr) return;
    std::string text = " [" + context->controller + " " +
                       (context->namespace_.empty() ? "" : context->namespace_ + "/") +
                       context->name + " " + context->reconcile_id + "]";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<ContextFlag>();
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

std::unique_ptr<spdlog::formatter> logFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  auto text = std::make_unique<spdlog::pattern_formatter>();
  text->add_flag<ContextFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %n%*: %v");
  return text;
}

void configureLogging(spdlog::level::level_enum level, LogFormat format) {
  std::lock_guard lock(loggerMutex());
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_formatter(logFormatter(format));
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
