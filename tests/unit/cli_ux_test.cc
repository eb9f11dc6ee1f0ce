// The command line as a user meets it (issue #22): global flags on either side of the command,
// and `--help` that tells the commands a person runs from the roles banlieue's pods run.
#include "host/app/cli.h"

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <set>
#include <string>
#include <vector>

namespace banlieue::app {
namespace {

struct Parsed {
  GlobalFlags flags;
  bool chose_command = false;
};

// Parses like `banlieue <args...>` without running the chosen command.
Parsed parse(std::vector<std::string> args) {
  CLI::App app;
  Parsed parsed;
  Action action;
  buildCli(app, parsed.flags, action);
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  parsed.chose_command = static_cast<bool>(action);
  return parsed;
}

TEST(CliUxTest, GlobalFlagsBeforeTheCommand) {
  auto parsed = parse({"--log-level", "debug", "--log-format", "json", "crdgen"});
  EXPECT_TRUE(parsed.chose_command);
  EXPECT_EQ(parsed.flags.log_level, "debug");
  EXPECT_EQ(parsed.flags.log_format, "json");
}

TEST(CliUxTest, GlobalFlagsAfterTheCommand) {
  for (const std::string command : {"controller", "operator", "imagebuilder", "crdgen"}) {
    auto parsed = parse({command, "--log-level", "debug", "--log-format=json"});
    EXPECT_TRUE(parsed.chose_command) << command;
    EXPECT_EQ(parsed.flags.log_level, "debug") << command;
    EXPECT_EQ(parsed.flags.log_format, "json") << command;
  }
}

TEST(CliUxTest, GlobalFlagsAfterANestedCommandAndBetweenItsOwnOptions) {
  auto parsed = parse({"bootstrap", "operator", "--dry-run", "--log-level", "warn", "--namespace",
                       "ns", "--log-format", "json"});
  EXPECT_TRUE(parsed.chose_command);
  EXPECT_EQ(parsed.flags.log_level, "warn");
  EXPECT_EQ(parsed.flags.log_format, "json");
  // Between the two words of a nested command, too.
  auto between = parse({"plugin", "--log-level", "error", "inspect", "/tmp"});
  EXPECT_TRUE(between.chose_command);
  EXPECT_EQ(between.flags.log_level, "error");
}

// What the operator writes into a provider pod's args (host/roles/operator/workload.cc).
TEST(CliUxTest, TheOperatorsProviderArgumentsStillParse) {
  auto parsed = parse({"--log-level", "trace", "--log-format", "json", "provider", "libvirt",
                       "--provider", "ns/p"});
  EXPECT_TRUE(parsed.chose_command);
  EXPECT_EQ(parsed.flags.log_level, "trace");
  EXPECT_EQ(parsed.flags.log_format, "json");
}

TEST(CliUxTest, AnUnknownFlagAfterTheCommandIsStillAnError) {
  EXPECT_THROW(parse({"controller", "--no-such-flag"}), CLI::ParseError);
  EXPECT_THROW(parse({"controller", "--log-level"}), CLI::ParseError);
}

TEST(CliUxTest, EveryCommandIsInOneOfTheTwoHelpGroups) {
  CLI::App app;
  GlobalFlags flags;
  Action action;
  buildCli(app, flags, action);
  std::set<std::string> user;
  std::set<std::string> roles;
  for (const auto* sub : app.get_subcommands({})) {
    if (sub->get_group() == kUserCommandsGroup) {
      user.insert(sub->get_name());
    } else if (sub->get_group() == kInClusterRolesGroup) {
      roles.insert(sub->get_name());
    } else {
      ADD_FAILURE() << sub->get_name() << " is in help group '" << sub->get_group() << "'";
    }
  }
  EXPECT_EQ(user, (std::set<std::string>{"bootstrap", "crdgen", "plugin", "vm"}));
  EXPECT_EQ(roles, (std::set<std::string>{"controller", "operator", "provider", "imagebuilder",
                                          "image-import", "image-checksum"}));
}

TEST(CliUxTest, HelpListsTheUserCommandsFirstThenTheRoles) {
  CLI::App app;
  GlobalFlags flags;
  Action action;
  buildCli(app, flags, action);
  const std::string help = app.help();
  auto user = help.find(std::string("\n") + kUserCommandsGroup + ":\n");
  auto roles = help.find(std::string("\n") + kInClusterRolesGroup + ":\n");
  ASSERT_NE(user, std::string::npos) << help;
  ASSERT_NE(roles, std::string::npos) << help;
  EXPECT_LT(user, roles) << help;
  auto bootstrap = help.find("\n  bootstrap ");
  auto controller = help.find("\n  controller ");
  EXPECT_TRUE(user < bootstrap && bootstrap < roles) << help;
  EXPECT_GT(controller, roles) << help;
  // The help says that the global flags go on either side of the command.
  EXPECT_NE(help.find("before or after the command"), std::string::npos) << help;
}

TEST(CliUxTest, ACommandsHelpMentionsTheGlobalFlags) {
  CLI::App app;
  GlobalFlags flags;
  Action action;
  buildCli(app, flags, action);
  const std::string help = app.get_subcommand("controller")->help();
  EXPECT_NE(help.find("--log-level"), std::string::npos) << help;
}

}  // namespace
}  // namespace banlieue::app
