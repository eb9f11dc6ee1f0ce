// Process-wide logging setup for every role: spdlog, level and format from the command line.
// Messages are lowercase, name the object as ns/name and never contain secrets.
#pragma once

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

// Installs the default logger on stderr with the given level and format. Call once, early.
void configureLogging(spdlog::level::level_enum level, LogFormat format);

// A named child logger ("plugin.loader", "provider.libvirt") sharing the default sinks and level.
std::shared_ptr<spdlog::logger> logger(const std::string& name);

// Escapes text for inclusion in a JSON string (without the quotes).
std::string jsonEscape(std::string_view text);

}  // namespace banlieue::common
