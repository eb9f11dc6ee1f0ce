#include "host/common/logging.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include <sstream>

namespace banlieue::common {
namespace {

TEST(LoggingTest, ParsesLevelsAndFormats) {
  EXPECT_EQ(parseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(parseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(parseLogLevel("error"), spdlog::level::err);
  EXPECT_EQ(parseLogLevel("off"), spdlog::level::off);
  EXPECT_FALSE(parseLogLevel("loud").has_value());
  EXPECT_EQ(parseLogFormat("json"), LogFormat::kJson);
  EXPECT_FALSE(parseLogFormat("yaml").has_value());
}

TEST(LoggingTest, JsonEscapeHandlesQuotesControlsAndNewlines) {
  EXPECT_EQ(jsonEscape("a\"b\\c\nd\te\x01"), "a\\\"b\\\\c\\nd\\te\\u0001");
  EXPECT_EQ(jsonEscape("plain ns/name"), "plain ns/name");
}

TEST(LoggingTest, ChildLoggersShareTheConfiguredLevel) {
  configureLogging(spdlog::level::warn, LogFormat::kJson);
  auto child = logger("provider.test");
  EXPECT_EQ(child->level(), spdlog::level::warn);
  EXPECT_EQ(logger("provider.test"), child) << "one logger per name";
}

}  // namespace
}  // namespace banlieue::common
