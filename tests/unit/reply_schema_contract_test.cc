// The reply schemas (sdk/schemas/*.response.json) agree with what the host reads from a plugin's
// reply (docs/provider-contract.md, "Fields the host reads"). Both directions:
//  - every field the host reads is declared in the schema of the reply it comes from;
//  - every field a reply schema declares is read by the host or listed below as informational,
//    with the reason.
// The host reads replies with sdk::json helpers spread over several roles, so the reads are
// listed here by hand, each with the file that reads it and the text of the read; a test checks
// that text is still in that file, and another scans the reading sites for reads of a reply
// that the list lacks.
#include "tests/support/build_paths.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace banlieue {
namespace {

namespace json = sdk::json;

const std::filesystem::path kSource = BANLIEUE_SOURCE_DIR;

// A field of a reply body: members joined by '.', "[]" after an array whose items follow
// ("status.addresses[].type").
struct HostRead {
  const char* schema;   // the reply's schema, file name without ".json"
  const char* field;    // where in the reply body
  const char* site;     // the file that reads it, from the source root
  const char* literal;  // the read as that file spells it
};

// Every field the host reads from a reply. The status fields of reconcile (and import_image)
// are applied to the infrastructure object's status as they are (machine_reconciler.cc), and
// the controller reads them there (status_mirror.cc), so "status.x" of the reply is
// "status.x" of the object.
const HostRead kHostReads[] = {
    // describe: plugin check, and the provider runtime's import settings.
    {"describe.response", "name", "host/plugin/conformance.cc",
     R"(json::stringOr(&doc, "name") != manifest_.name)"},
    {"describe.response", "kinds", "host/plugin/conformance.cc", R"(doc["kinds"].GetArray())"},
    {"describe.response", "kinds[].group", "host/plugin/conformance.cc",
     R"(json::stringOr(&k, "group"))"},
    {"describe.response", "kinds[].version", "host/plugin/conformance.cc",
     R"(json::stringOr(&k, "version"))"},
    {"describe.response", "kinds[].kind", "host/plugin/conformance.cc",
     R"(json::stringOr(&k, "kind"))"},
    {"describe.response", "kinds[].operations", "host/plugin/conformance.cc",
     R"(k["operations"].GetArray())"},
    {"describe.response", "operations.introspect", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.introspect", false))"},
    {"describe.response", "operations.importImage", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.importImage", false))"},
    {"describe.response", "operations.importImage", "host/roles/provider/provider_command.cc",
     R"(json::boolean(&caps, "operations.importImage", false))"},
    {"describe.response", "operations.deleteImage", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.deleteImage", false))"},
    {"describe.response", "operations.snapshot", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.snapshot", false))"},
    {"describe.response", "operations.console", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.console", false))"},
    {"describe.response", "operations.watchChanges", "host/plugin/conformance.cc",
     R"(json::boolean(&doc, "operations.watchChanges", false))"},
    {"describe.response", "imageFormats", "host/roles/provider/provider_command.cc",
     R"(json::find(&caps, "imageFormats"))"},

    // introspect: the provider runtime copies failureDomains to Provider.status, which the
    // API types decode (host/api/provider.cc) and the scheduler reads.
    {"introspect.response", "failureDomains", "host/roles/provider/provider_reconciler.cc",
     R"(json::member(&body, "failureDomains"))"},
    {"introspect.response", "operation.token", "host/roles/provider/provider_reconciler.cc",
     R"(json::stringOr(&body, "operation.token"))"},
    {"introspect.response", "failureDomains[].name", "host/api/provider.cc",
     R"(.field("name", &T::name,)"},
    {"introspect.response", "failureDomains[].name", "host/roles/controller/scheduler.cc",
     "placement.failure_domain = fd.name;"},
    {"introspect.response", "failureDomains[].labels", "host/api/provider.cc",
     R"(.field("labels", &T::labels)"},
    {"introspect.response", "failureDomains[].labels", "host/roles/controller/scheduler.cc",
     "fd.labels.find(topology_key)"},
    {"introspect.response", "failureDomains[].attributes.availableStorageClasses",
     "host/api/provider.cc", R"(.field("availableStorageClasses", &T::available_storage_classes)"},
    {"introspect.response", "failureDomains[].attributes.availableStorageClasses",
     "host/roles/controller/scheduler.cc", "fd.attributes.available_storage_classes"},
    {"introspect.response", "failureDomains[].attributes.availableNetworkClasses",
     "host/api/provider.cc", R"(.field("availableNetworkClasses", &T::available_network_classes)"},
    {"introspect.response", "failureDomains[].attributes.availableNetworkClasses",
     "host/roles/controller/scheduler.cc", "fd.attributes.available_network_classes"},
    {"introspect.response", "failureDomains[].attributes.features", "host/api/provider.cc",
     R"(.field("features", &T::features)"},
    {"introspect.response", "failureDomains[].attributes.features",
     "host/roles/controller/scheduler.cc", "contains(fd.attributes.features, feature)"},
    {"introspect.response", "failureDomains[].attributes.raw", "host/api/provider.cc",
     R"(.field("raw", &T::raw)"},
    {"introspect.response", "failureDomains[].attributes.raw", "host/roles/controller/scheduler.cc",
     "placement.failure_domain_raw = fd.attributes.raw;"},
    // The provider runtime's import plan: one import Job and zone row per target.
    {"introspect.response", "failureDomains[].attributes.importTargets", "host/api/provider.cc",
     R"(.field("importTargets", &T::import_targets)"},
    {"introspect.response", "failureDomains[].attributes.importTargets",
     "host/roles/provider/image_import_plan.cc", R"(json::find(&fd, "attributes.importTargets"))"},

    // reconcile and finalize: the provider runtime.
    {"reconcile.response", "status", "host/roles/provider/machine_reconciler.cc",
     R"(json::member(&reply, "status"))"},
    {"reconcile.response", "status.providerID", "host/roles/provider/machine_reconciler.cc",
     R"(name == "providerID")"},
    {"reconcile.response", "status.initialization.provisioned",
     "host/roles/provider/machine_reconciler.cc",
     R"(json::boolean(&status, "initialization.provisioned"))"},
    {"reconcile.response", "status.conditions", "host/roles/provider/machine_reconciler.cc",
     R"(json::find(&reply, "status.conditions"))"},
    {"reconcile.response", "status.conditions[].type", "host/roles/provider/machine_reconciler.cc",
     R"(out.push_back({json::stringOr(&c, "type"))"},
    {"reconcile.response", "status.conditions[].status",
     "host/roles/provider/machine_reconciler.cc", R"(json::stringOr(&c, "status"))"},
    {"reconcile.response", "status.conditions[].reason",
     "host/roles/provider/machine_reconciler.cc", R"(json::stringOr(&c, "reason"))"},
    {"reconcile.response", "status.conditions[].message",
     "host/roles/provider/machine_reconciler.cc", R"(json::stringOr(&c, "message"))"},
    {"reconcile.response", "operation.token", "host/roles/provider/machine_reconciler.cc",
     R"(json::stringOr(&reply, "operation.token"))"},
    {"reconcile.response", "operation.description", "host/roles/provider/machine_reconciler.cc",
     R"(json::stringOr(&reply, "operation.description"))"},
    {"reconcile.response", "settled", "host/roles/provider/machine_reconciler.cc",
     R"(json::boolean(&reply, "settled"))"},
    // reconcile: what the controller mirrors onto the VirtualMachine.
    {"reconcile.response", "status.initialization.provisioned",
     "host/roles/controller/status_mirror.cc",
     R"(json::find(&infra, "status.initialization.provisioned"))"},
    {"reconcile.response", "status.addresses", "host/roles/controller/status_mirror.cc",
     R"(json::find(&infra, "status.addresses"))"},
    {"reconcile.response", "status.addresses[].type", "host/roles/controller/status_mirror.cc",
     R"(json::string(&entry, "type"))"},
    {"reconcile.response", "status.addresses[].address", "host/roles/controller/status_mirror.cc",
     R"(json::string(&entry, "address"))"},
    {"reconcile.response", "status.observedPowerState", "host/roles/controller/status_mirror.cc",
     R"(json::stringOr(&infra, "status.observedPowerState"))"},
    {"reconcile.response", "status.lastRestart", "host/roles/controller/status_mirror.cc",
     R"(json::string(&infra, "status.lastRestart.requestedAt"))"},
    {"reconcile.response", "status.lastRestart.requestedAt",
     "host/roles/controller/status_mirror.cc",
     R"(json::string(&infra, "status.lastRestart.requestedAt"))"},
    {"reconcile.response", "status.lastRestart.performedAt",
     "host/roles/controller/status_mirror.cc",
     R"(json::stringOr(&infra, "status.lastRestart.performedAt"))"},
    {"reconcile.response", "status.lastRestart.outcome", "host/roles/controller/status_mirror.cc",
     R"(json::stringOr(&infra, "status.lastRestart.outcome"))"},
    {"reconcile.response", "status.tpmEndorsementCertificates",
     "host/roles/controller/status_mirror.cc",
     R"(json::find(&infra, "status.tpmEndorsementCertificates"))"},
    // import_image (same reply schema): the image-import Job.
    {"reconcile.response", "status.resolvedRef", "host/roles/images/image_import_command.cc",
     R"(json::stringOr(&body, "status.resolvedRef"))"},
    {"reconcile.response", "operation.token", "host/roles/images/image_import_command.cc",
     R"(json::stringOr(&body, "operation.token"))"},
    {"reconcile.response", "status.progress.bytesDone", "host/roles/images/image_import_command.cc",
     R"(json::integer(&body, "status.progress.bytesDone"))"},
    {"reconcile.response", "status.progress.bytesTotal",
     "host/roles/images/image_import_command.cc",
     R"(json::integer(&body, "status.progress.bytesTotal"))"},
    {"reconcile.response", "status.progress.phase", "host/roles/images/image_import_command.cc",
     R"(json::stringOr(&body, "status.progress.phase", "Importing"))"},
    // console_open: the provider's console server, and the host's check of a ticket console.
    {"console.response", "status.description", "host/roles/provider/console_server.cc",
     R"(json::stringOr(&reply, "status.description"))"},
    {"console.response", "status.url", "host/roles/provider/console_server.cc",
     R"(json::stringOr(&reply, "status.url"))"},
    {"console.response", "status.url", "host/plugin/plugin.cc",
     R"(sdk::json::stringOr(&answered, "status.url"))"},
    {"console.response", "status.expiresInSeconds", "host/roles/provider/console_server.cc",
     R"(json::integer(&reply, "status.expiresInSeconds"))"},
    // watch_changes: the provider's change feed.
    {"watch_changes.response", "cursor", "host/roles/provider/change_feed.cc",
     R"(json::stringOr(&reply, "cursor"))"},
    {"watch_changes.response", "changed", "host/roles/provider/change_feed.cc",
     R"(json::member(&reply, "changed"))"},
    {"watch_changes.response", "all", "host/roles/provider/change_feed.cc",
     R"(json::boolean(&reply, "all", false))"},
};

// Fields a reply schema declares that the host does not read, and why they are there.
struct Informational {
  const char* schema;
  const char* field;
  const char* reason;
};

const Informational kInformational[] = {
    {"describe.response", "providerVersion",
     "shown by `banlieue plugin inspect`; the host takes the version from the table and "
     "provider.json"},
    {"describe.response", "backend",
     "shown by `banlieue plugin inspect`; the host names a plugin by provider.json's name"},
    {"describe.response", "features",
     "shown by `banlieue plugin inspect`; the scheduler takes features from each failure "
     "domain's attributes.features"},
    {"introspect.response", "features",
     "accepted and ignored: the provider runtime publishes only failureDomains, and a zone's "
     "features go in its attributes.features"},
    {"reconcile.response", "status.failureDomain",
     "Cluster API's InfraMachine field: applied to the object's status for users and Cluster "
     "API tooling; banlieue places by spec.failureDomain, which the controller writes"},
    {"reconcile.response", "status.operationToken",
     "refused (the schema allows no value): the runtime's own field, declared so that a reply "
     "carrying it is a ProviderProtocolError naming it; a task is named in operation.token"},
    {"reconcile.response", "status.observedGeneration",
     "refused (the schema allows no value): the runtime's own field, declared so that a reply "
     "carrying it is a ProviderProtocolError naming it"},
    {"console.response", "status.console",
     "the host knows which console it asked for (the request's console); checked by `banlieue "
     "plugin check` against the schema"},
    {"validate.response", "warnings",
     "no host caller shows them yet: only `banlieue plugin check` calls validate, and it checks "
     "their shape"},
};

// A file that reads replies, the variable holding the reply (or, for `prefix` "status.", the
// object's status after the reply was applied), and the reply's schema.
struct ReadingSite {
  const char* site;
  const char* variable;
  const char* schema;
  const char* prefix;
};

const ReadingSite kReadingSites[] = {
    {"host/roles/provider/machine_reconciler.cc", "reply", "reconcile.response", ""},
    {"host/roles/provider/machine_reconciler.cc", "status", "reconcile.response", "status."},
    {"host/roles/provider/provider_reconciler.cc", "body", "introspect.response", ""},
    {"host/roles/provider/provider_command.cc", "caps", "describe.response", ""},
    {"host/roles/images/image_import_command.cc", "body", "reconcile.response", ""},
    {"host/roles/controller/status_mirror.cc", "infra", "reconcile.response", ""},
    {"host/roles/provider/console_server.cc", "reply", "console.response", ""},
    {"host/roles/provider/change_feed.cc", "reply", "watch_changes.response", ""},
};

// Reads at the sites above of fields that no reply carries.
const std::set<std::string> kNotFromReplies = {
    // The provider runtime writes Ready itself from the call's outcome (machine_reconciler.cc).
    "reconcile.response status.conditions",
};

std::string readSource(const std::string& relative) {
  std::ifstream in(kSource / relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

rapidjson::Document schema(const std::string& name) {
  return json::parse(readSource("sdk/schemas/" + name + ".json"), name);
}

std::vector<std::string> split(const std::string& field) {
  std::vector<std::string> parts;
  std::stringstream in(field);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

// The schema node declaring `field`, or nullptr.
const rapidjson::Value* declared(const rapidjson::Value& root, const std::string& field) {
  const rapidjson::Value* node = &root;
  for (std::string part : split(field)) {
    bool items = part.size() > 2 && part.compare(part.size() - 2, 2, "[]") == 0;
    if (items) part.resize(part.size() - 2);
    node = json::member(json::member(node, "properties"), part.c_str());
    if (node != nullptr && items) node = json::member(node, "items");
    if (node == nullptr) return nullptr;
  }
  return node;
}

// Every field a schema declares (objects and arrays too), in the notation of HostRead.
void declaredFields(const rapidjson::Value& node, const std::string& prefix,
                    std::vector<std::string>& out) {
  const auto* properties = json::member(&node, "properties");
  if (properties == nullptr || !properties->IsObject()) return;
  for (const auto& p : properties->GetObject()) {
    std::string field = prefix + p.name.GetString();
    out.push_back(field);
    declaredFields(p.value, field + ".", out);
    if (const auto* items = json::member(&p.value, "items"); items != nullptr)
      declaredFields(*items, field + "[].", out);
  }
}

bool readByHost(const std::string& schema_name, const std::string& field) {
  for (const auto& read : kHostReads) {
    if (read.schema != schema_name) continue;
    std::string f = read.field;
    // A member on the way to a field that is read ("status", "status.addresses").
    if (f == field || f.rfind(field + ".", 0) == 0 || f.rfind(field + "[].", 0) == 0) return true;
  }
  return false;
}

const Informational* informational(const std::string& schema_name, const std::string& field) {
  for (const auto& entry : kInformational) {
    if (entry.schema != schema_name) continue;
    std::string f = entry.field;
    if (f == field || field.rfind(f + ".", 0) == 0 || field.rfind(f + "[].", 0) == 0) return &entry;
  }
  return nullptr;
}

TEST(ReplySchemaContractTest, EveryFieldTheHostReadsIsDeclaredInItsSchema) {
  for (const auto& read : kHostReads) {
    auto doc = schema(read.schema);
    EXPECT_NE(declared(doc, read.field), nullptr)
        << read.site << " reads " << read.field << " of the " << read.schema
        << " reply, which sdk/schemas/" << read.schema << ".json does not declare";
  }
}

TEST(ReplySchemaContractTest, EveryDeclaredFieldIsReadOrInformational) {
  for (const char* name : {"describe.response", "introspect.response", "reconcile.response",
                           "validate.response", "console.response", "watch_changes.response"}) {
    auto doc = schema(name);
    std::vector<std::string> fields;
    declaredFields(doc, "", fields);
    EXPECT_FALSE(fields.empty()) << name;
    for (const auto& field : fields) {
      EXPECT_TRUE(readByHost(name, field) || informational(name, field) != nullptr)
          << "sdk/schemas/" << name << ".json declares " << field
          << ", which the host never reads; read it, remove it, or list it as informational "
             "here with the reason";
    }
  }
  for (const auto& entry : kInformational) {
    auto doc = schema(entry.schema);
    EXPECT_NE(declared(doc, entry.field), nullptr)
        << entry.field << " is listed as informational but " << entry.schema
        << " does not declare it";
    EXPECT_FALSE(readByHost(entry.schema, entry.field))
        << entry.field << " is read by the host: it is not informational";
  }
}

TEST(ReplySchemaContractTest, EveryListedReadIsStillInItsFile) {
  for (const auto& read : kHostReads) {
    std::string text = readSource(read.site);
    ASSERT_FALSE(text.empty()) << read.site << " is missing";
    EXPECT_NE(text.find(read.literal), std::string::npos)
        << read.site << " no longer contains `" << read.literal << "` (the read of " << read.field
        << "): update this list and docs/provider-contract.md";
  }
}

TEST(ReplySchemaContractTest, TheReadingSitesReadNothingUnlisted) {
  for (const auto& site : kReadingSites) {
    std::string text = readSource(site.site);
    ASSERT_FALSE(text.empty()) << site.site << " is missing";
    std::regex read(std::string(R"(json::[A-Za-z]+\(\s*&)") + site.variable +
                    R"(\s*,\s*"([^"]+)\")");
    int found = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
      ++found;
      std::string field = site.prefix + (*it)[1].str();
      if (kNotFromReplies.count(std::string(site.schema) + " " + field) != 0) continue;
      EXPECT_TRUE(readByHost(site.schema, field))
          << site.site << " reads " << field << " of the " << site.schema << " reply (from `"
          << site.variable << "`), which kHostReads does not list";
    }
    EXPECT_GT(found, 0) << site.site << " no longer reads `" << site.variable
                        << "` through sdk::json: update kReadingSites";
  }
}

}  // namespace
}  // namespace banlieue
