// Process-wide logging setup for every role: spdlog, level and format from the command line.
// Messages are lowercase, name the object as ns/name and never contain secrets.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::common {

enum class LogFormat { kText, kJson };

// Parses "trace|debug|info|warn|error|critical|off"; nullopt for anything else.
std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view text);
std::optional<LogFormat> parseLogFormat(std::string_view text);

// The formatter of a format: text ("<time> <level> <logger> [<controller> <ns>/<name> <id>]:
// <message>", the bracket only within a reconcile) or one JSON object a line (log_context.h).
std::unique_ptr<spdlog::formatter> logFormatter(LogFormat format);

// Installs the default logger on stderr with the given level and format. Call once, early.
void configureLogging(spdlog::level::level_enum level, LogFormat format);

// A named child logger ("plugin.loader", "provider.libvirt") sharing the default sinks and level.
std::shared_ptr<spdlog::logger> logger(const std::string& name);

// Escapes text for inclusion in a JSON string (without the quotes).
std::string jsonEscape(std::string_view text);

}  // namespace banlieue::common
