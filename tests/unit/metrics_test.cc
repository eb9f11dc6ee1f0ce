#include "host/common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, RendersPrometheusTextFormat) {
  MetricsRegistry registry;
  registry.counter("t_requests_total", "Requests", {{"verb", "GET"}, {"code", "200"}}).inc(3);
  registry.counter("t_requests_total", "Requests", {{"verb", "GET"}, {"code", "200"}}).inc();
  registry.gauge("t_depth", "Depth", {{"name", "a\"b"}}).set(7);
  auto& h = registry.histogram("t_latency_seconds", "Latency", {}, {0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("# TYPE t_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("t_requests_total{verb=\"GET\",code=\"200\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("t_depth{name=\"a\\\"b\"} 7\n")) << "label values escaped";
  EXPECT_THAT(text, HasSubstr("t_latency_seconds_bucket{le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("t_latency_seconds_bucket{le=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("t_latency_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("t_latency_seconds_sum 5.55\n"));
  EXPECT_THAT(text, HasSubstr("t_latency_seconds_count 3\n"));
}

TEST(MetricsTest, OneNameCannotHaveTwoTypes) {
  MetricsRegistry registry;
  registry.counter("t_x", "x");
  EXPECT_THROW(registry.gauge("t_x", "x"), std::logic_error);
}

}  // namespace
}  // namespace banlieue
