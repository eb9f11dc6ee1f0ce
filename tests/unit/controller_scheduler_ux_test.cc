// The scheduler's NoProviderMatched message says where it looked and for what: the namespace
// searched, how many Providers it holds, and the labels the VM asked for, in the syntax
// `kubectl get providers -l` takes.
#include "host/roles/controller/label_selector.h"
#include "host/roles/controller/scheduler.h"

#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

api::Provider provider(const std::string& name, const std::string& ns, api::StringMap labels) {
  api::Provider out;
  out.metadata.name = name;
  out.metadata.namespace_ = ns;
  out.metadata.labels = std::move(labels);
  out.spec.provider_class_ref.name = "libvirt";
  api::ProviderFailureDomain fd;
  fd.name = "a";
  out.status.failure_domains = {fd};
  return out;
}

class NoProviderMatchedTest : public ::testing::Test {
 protected:
  NoProviderMatchedTest() {
    vm_.metadata.name = "web-1";
    vm_.metadata.namespace_ = "team";
    image_.metadata.name = "debian";
  }

  SchedulingResult run() {
    SchedulingInput input{.vm = &vm_, .vm_class = &class_, .image = &image_};
    input.providers = providers_;
    return schedule(input);
  }

  api::VirtualMachine vm_;
  api::VMClass class_;
  api::VMImage image_;
  std::vector<api::Provider> providers_;
};

TEST_F(NoProviderMatchedTest, NamesTheNamespaceTheProviderCountAndTheLabelsAskedFor) {
  // Providers elsewhere do not count: only the VM's namespace is searched.
  providers_ = {provider("p1", "team", {{"tier", "silver"}}),
                provider("p2", "team", {{"tier", "bronze"}}),
                provider("gold", "elsewhere", {{"tier", "gold"}})};
  vm_.spec.placement.provider_selector = api::LabelSelector{
      .match_labels = {{"tier", "gold"}},
      .match_expressions = {{.key = "zone", .operator_ = "In", .values = {"a", "b"}},
                            {.key = "gpu", .operator_ = "DoesNotExist"}}};
  auto result = run();
  ASSERT_FALSE(result.scheduled);
  EXPECT_EQ(result.reason, "NoProviderMatched");
  EXPECT_EQ(result.message,
            "no Provider in namespace team matches providerSelector tier=gold,zone in (a,b),!gpu: "
            "the namespace holds 2 Providers, none with those labels");
}

TEST_F(NoProviderMatchedTest, AnEmptyNamespaceSaysSo) {
  providers_ = {provider("gold", "elsewhere", {{"tier", "gold"}})};
  vm_.spec.placement.provider_selector = api::LabelSelector{.match_labels = {{"tier", "gold"}}};
  auto result = run();
  EXPECT_EQ(result.reason, "NoProviderMatched");
  EXPECT_EQ(result.message,
            "no Provider in namespace team matches providerSelector tier=gold: the namespace "
            "holds no Providers");

  vm_.spec.placement.provider_selector.reset();
  result = run();
  EXPECT_EQ(result.reason, "NoProviderMatched");
  EXPECT_EQ(result.message,
            "no Provider in namespace team: the namespace holds no Providers (the VM has no "
            "providerSelector, so any would do)");
}

TEST(LabelSelectorTextTest, UsesKubectlSelectorSyntax) {
  EXPECT_EQ(selectorText({}), "(empty: matches all)");
  EXPECT_EQ(selectorText({.match_labels = {{"a", "1"}, {"b", "2"}}}), "a=1,b=2");
  EXPECT_EQ(selectorText({.match_expressions = {{.key = "k", .operator_ = "NotIn", .values = {"x"}},
                                                {.key = "e", .operator_ = "Exists"}}}),
            "k notin (x),e");
}

}  // namespace
}  // namespace banlieue::controller
