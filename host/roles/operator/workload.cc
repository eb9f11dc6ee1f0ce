#include "host/roles/operator/workload.h"

#include "host/roles/common/backend_roles.h"

#include "host/api/codec.h"
#include "host/api/kinds.h"
#include "host/common/fnv_hash.h"
#include "host/roles/operator/workload_names.h"
#include "host/roles/provider/console_access.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>

#include <algorithm>

namespace banlieue::roles::provider_operator {
namespace {

using Alloc = rapidjson::Document::AllocatorType;
using Strings = std::vector<std::string>;

constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";
constexpr int kMetricsPort = 8080;
constexpr int kHealthPort = 8081;
constexpr int kConsolePort = ::banlieue::roles::provider::kDefaultConsolePort;
constexpr int64_t kNonRootId = 65532;
constexpr const char* kStateMountPath = "/var/lib/banlieue";

rapidjson::Value strings(const Strings& items, Alloc& a) {
  rapidjson::Value out(rapidjson::kArrayType);
  for (const auto& s : items) out.PushBack(sdk::json::stringValue(s, a), a);
  return out;
}

rapidjson::Value stringMap(const std::map<std::string, std::string>& items, Alloc& a) {
  rapidjson::Value out(rapidjson::kObjectType);
  for (const auto& [k, v] : items)
    out.AddMember(sdk::json::stringValue(k, a), sdk::json::stringValue(v, a), a);
  return out;
}

void put(rapidjson::Value& object, const char* key, rapidjson::Value value, Alloc& a) {
  object.AddMember(rapidjson::StringRef(key), value, a);
}

void put(rapidjson::Value& object, const char* key, const std::string& value, Alloc& a) {
  put(object, key, sdk::json::stringValue(value, a), a);
}

rapidjson::Value object() {
  return rapidjson::Value(rapidjson::kObjectType);
}

// A deep copy of `path` (dot-separated members) of `from`, or null when absent.
rapidjson::Value copyOf(const rapidjson::Value& from, std::initializer_list<const char*> path,
                        Alloc& a) {
  const rapidjson::Value* at = &from;
  for (const char* key : path) {
    if (!at->IsObject()) return {};
    auto it = at->FindMember(key);
    if (it == at->MemberEnd()) return {};
    at = &it->value;
  }
  return rapidjson::Value(*at, a);
}

struct Context {
  const api::Provider& provider;
  const api::ProviderClass& provider_class;
  const WorkloadOptions& options;
  std::string name;
  std::string workload_ns;
  std::map<std::string, std::string> labels;
};

// metadata with labels, and the Provider as controller owner when the object lives in the
// Provider's namespace: the API server's garbage collector ignores owners in other namespaces
// (and cluster-scoped objects cannot have a namespaced owner), so those are removed by the
// finalizer instead.
rapidjson::Value metadata(const Context& c, const std::string& name, const std::string& ns,
                          Alloc& a) {
  auto meta = object();
  put(meta, "name", name, a);
  if (!ns.empty()) put(meta, "namespace", ns, a);
  put(meta, "labels", stringMap(c.labels, a), a);
  if (!ns.empty() && ns == c.provider.metadata.namespace_) {
    auto ref = object();
    put(ref, "apiVersion", std::string(api::kGroup) + "/" + api::kVersion, a);
    put(ref, "kind", "Provider", a);
    put(ref, "name", c.provider.metadata.name, a);
    put(ref, "uid", c.provider.metadata.uid, a);
    put(ref, "controller", rapidjson::Value(true), a);
    put(ref, "blockOwnerDeletion", rapidjson::Value(true), a);
    rapidjson::Value refs(rapidjson::kArrayType);
    refs.PushBack(ref, a);
    put(meta, "ownerReferences", std::move(refs), a);
  }
  return meta;
}

MintedObject start(const Context& c, const kube::ResourceType& type, const char* kind,
                   const std::string& name, const std::string& ns) {
  MintedObject m{type, ns, name, rapidjson::Document(rapidjson::kObjectType)};
  auto& a = m.body.GetAllocator();
  put(m.body, "apiVersion", type.apiVersion(), a);
  put(m.body, "kind", kind, a);
  put(m.body, "metadata", metadata(c, name, ns, a), a);
  return m;
}

rapidjson::Value ruleValue(const api::PolicyRule& rule, Alloc& a) {
  auto out = object();
  if (!rule.non_resource_urls.empty()) {
    put(out, "nonResourceURLs", strings(rule.non_resource_urls, a), a);
  } else {
    put(out, "apiGroups", strings(rule.api_groups, a), a);
    put(out, "resources", strings(rule.resources, a), a);
  }
  if (!rule.resource_names.empty()) put(out, "resourceNames", strings(rule.resource_names, a), a);
  put(out, "verbs", strings(rule.verbs, a), a);
  return out;
}

MintedObject role(const Context& c, const std::string& name,
                  const std::vector<api::PolicyRule>& rules) {
  auto m = start(c, rbac::kRole, "Role", name, c.provider.metadata.namespace_);
  auto& a = m.body.GetAllocator();
  rapidjson::Value list(rapidjson::kArrayType);
  for (const auto& r : rules) list.PushBack(ruleValue(r, a), a);
  put(m.body, "rules", std::move(list), a);
  return m;
}

MintedObject binding(const Context& c, const kube::ResourceType& type, const char* kind,
                     const std::string& name, const std::string& ns, const char* role_kind,
                     const std::string& role_name, const std::string& sa,
                     const std::string& sa_ns) {
  auto m = start(c, type, kind, name, ns);
  auto& a = m.body.GetAllocator();
  auto role_ref = object();
  put(role_ref, "apiGroup", kRbacGroup, a);
  put(role_ref, "kind", role_kind, a);
  put(role_ref, "name", role_name, a);
  put(m.body, "roleRef", std::move(role_ref), a);
  auto subject = object();
  put(subject, "kind", "ServiceAccount", a);
  put(subject, "name", sa, a);
  put(subject, "namespace", sa_ns, a);
  rapidjson::Value subjects(rapidjson::kArrayType);
  subjects.PushBack(subject, a);
  put(m.body, "subjects", std::move(subjects), a);
  return m;
}

// Names set on the Provider, deduplicated, in a stable order; empty names are dropped so a
// rule is never written with an empty resourceNames list (which grants every object).
Strings namesOf(std::initializer_list<const std::string*> candidates) {
  Strings out;
  for (const auto* name : candidates) {
    if (name == nullptr || name->empty()) continue;
    if (std::find(out.begin(), out.end(), *name) == out.end()) out.push_back(*name);
  }
  return out;
}

const std::string* credentialsSecret(const api::Provider& p) {
  return p.spec.connection.credentials_ref ? &p.spec.connection.credentials_ref->name : nullptr;
}
const std::string* caSecret(const api::Provider& p) {
  const auto& ca = p.spec.connection.ca_bundle;
  return ca && ca->secret_ref ? &ca->secret_ref->name : nullptr;
}
const std::string* caConfigMap(const api::Provider& p) {
  const auto& ca = p.spec.connection.ca_bundle;
  return ca && ca->config_map_ref ? &ca->config_map_ref->name : nullptr;
}

api::PolicyRule rule(Strings groups, Strings resources, Strings verbs, Strings names = {}) {
  api::PolicyRule r;
  r.api_groups = std::move(groups);
  r.resources = std::move(resources);
  r.verbs = std::move(verbs);
  r.resource_names = std::move(names);
  return r;
}

// The import Jobs read the Provider and its connection sources, nothing else.
std::vector<api::PolicyRule> importRoleRules(const api::Provider& p) {
  std::vector<api::PolicyRule> rules = {
      rule({api::kGroup}, {"providers"}, {"get"}, {p.metadata.name})};
  auto secrets = namesOf({credentialsSecret(p), caSecret(p)});
  if (!secrets.empty()) rules.push_back(rule({""}, {"secrets"}, {"get"}, secrets));
  auto config_maps = namesOf({caConfigMap(p)});
  if (!config_maps.empty()) rules.push_back(rule({""}, {"configmaps"}, {"get"}, config_maps));
  return rules;
}

rapidjson::Value envFromField(const char* name, const char* field, Alloc& a) {
  auto env = object();
  put(env, "name", name, a);
  auto field_ref = object();
  put(field_ref, "fieldPath", field, a);
  auto value_from = object();
  put(value_from, "fieldRef", std::move(field_ref), a);
  put(env, "valueFrom", std::move(value_from), a);
  return env;
}

rapidjson::Value port(const char* name, int number, Alloc& a) {
  auto p = object();
  put(p, "name", name, a);
  put(p, "containerPort", rapidjson::Value(number), a);
  put(p, "protocol", "TCP", a);
  return p;
}

rapidjson::Value probe(const char* path, int delay, int period, int timeout, Alloc& a) {
  auto get = object();
  put(get, "path", path, a);
  put(get, "port", "health", a);
  auto p = object();
  put(p, "httpGet", std::move(get), a);
  put(p, "initialDelaySeconds", rapidjson::Value(delay), a);
  put(p, "periodSeconds", rapidjson::Value(period), a);
  put(p, "timeoutSeconds", rapidjson::Value(timeout), a);
  put(p, "failureThreshold", rapidjson::Value(3), a);
  return p;
}

rapidjson::Value seccompRuntimeDefault(Alloc& a) {
  auto s = object();
  put(s, "type", "RuntimeDefault", a);
  return s;
}

rapidjson::Value defaultResources(Alloc& a) {
  auto requests = object();
  put(requests, "cpu", "50m", a);
  put(requests, "memory", "128Mi", a);
  auto limits = object();
  put(limits, "cpu", "1000m", a);
  put(limits, "memory", "512Mi", a);
  auto out = object();
  put(out, "requests", std::move(requests), a);
  put(out, "limits", std::move(limits), a);
  return out;
}

// The contract with the provider runtime (`banlieue provider <backend>`): global log flags
// first, then the subcommand with its Provider, plugin directory and Lease.
Strings providerArgs(const Context& c) {
  const auto& spec = c.provider_class.spec;
  std::string level = spec.logging && !spec.logging->level.empty() ? spec.logging->level : "info";
  std::string format =
      spec.logging && !spec.logging->format.empty() ? spec.logging->format : "text";
  return {"--log-level", level, "--log-format", format, "provider", spec.backend, "--provider",
          c.provider.metadata.namespace_ + "/" + c.provider.metadata.name, "--plugin-dir",
          c.options.image_plugin_dir, "--leader-election-id", c.name,
          // The Lease lives next to the Role that grants it (the Provider's namespace); that is
          // also the workload namespace unless the class moves Deployments elsewhere.
          "--leader-election-namespace", c.provider.metadata.namespace_,
          // The crash journal: survives a container restart (emptyDir), not the pod.
          "--state-dir", kStateMountPath,
          // Metrics stay inside the pod unless the class's platform team exposes them.
          "--metrics-bind-address", "127.0.0.1",
          // Consoles on loopback: reached only through pods/portforward (docs/adr/0040).
          "--console-port", std::to_string(kConsolePort)};
}

// The root filesystem is read-only: the runtime's state and the plugins' scratch files go to
// volumes of the pod's own (a plugin's temporary files, libraries that write to /tmp).
rapidjson::Value emptyDirVolume(const char* name, Alloc& a) {
  auto v = object();
  put(v, "name", name, a);
  put(v, "emptyDir", object(), a);
  return v;
}

rapidjson::Value volumeMount(const char* name, const char* path, Alloc& a) {
  auto m = object();
  put(m, "name", name, a);
  put(m, "mountPath", path, a);
  return m;
}

MintedObject deployment(const Context& c) {
  const auto& spec = c.provider_class.spec;
  auto m = start(c, kube::resources::kDeployment, "Deployment", c.name, c.workload_ns);
  auto& a = m.body.GetAllocator();
  rapidjson::Document class_doc;
  class_doc.Parse(api::toJson(c.provider_class).c_str());

  auto container = object();
  put(container, "name", "provider", a);
  put(container, "image", imageReference(*spec.image), a);
  if (!spec.image->pull_policy.empty())
    put(container, "imagePullPolicy", spec.image->pull_policy, a);
  put(container, "args", strings(providerArgs(c), a), a);
  rapidjson::Value env(rapidjson::kArrayType);
  env.PushBack(envFromField("POD_NAME", "metadata.name", a), a);
  env.PushBack(envFromField("POD_NAMESPACE", "metadata.namespace", a), a);
  for (const auto& [name, value] : c.options.proxy_env) {
    auto var = object();
    put(var, "name", name, a);
    put(var, "value", value, a);
    env.PushBack(std::move(var), a);
  }
  put(container, "env", std::move(env), a);
  rapidjson::Value ports(rapidjson::kArrayType);
  ports.PushBack(port("metrics", kMetricsPort, a), a);
  ports.PushBack(port("health", kHealthPort, a), a);
  ports.PushBack(port("console", kConsolePort, a), a);
  put(container, "ports", std::move(ports), a);
  put(container, "readinessProbe", probe("/readyz", 2, 5, 2, a), a);
  put(container, "livenessProbe", probe("/healthz", 10, 30, 3, a), a);
  auto resources = copyOf(class_doc, {"spec", "resources"}, a);
  put(container, "resources", resources.IsObject() ? std::move(resources) : defaultResources(a), a);
  auto container_security = object();
  put(container_security, "allowPrivilegeEscalation", rapidjson::Value(false), a);
  put(container_security, "readOnlyRootFilesystem", rapidjson::Value(true), a);
  auto caps = object();
  put(caps, "drop", strings({"ALL"}, a), a);
  put(container_security, "capabilities", std::move(caps), a);
  put(container_security, "seccompProfile", seccompRuntimeDefault(a), a);
  put(container, "securityContext", std::move(container_security), a);
  rapidjson::Value mounts(rapidjson::kArrayType);
  mounts.PushBack(volumeMount("state", kStateMountPath, a), a);
  mounts.PushBack(volumeMount("tmp", "/tmp", a), a);
  put(container, "volumeMounts", std::move(mounts), a);

  auto pod = object();
  put(pod, "serviceAccountName", c.name, a);
  put(pod, "terminationGracePeriodSeconds", rapidjson::Value(30), a);
  auto pod_security = object();
  put(pod_security, "runAsNonRoot", rapidjson::Value(true), a);
  put(pod_security, "runAsUser", rapidjson::Value(kNonRootId), a);
  put(pod_security, "runAsGroup", rapidjson::Value(kNonRootId), a);
  put(pod_security, "fsGroup", rapidjson::Value(kNonRootId), a);
  put(pod_security, "seccompProfile", seccompRuntimeDefault(a), a);
  put(pod, "securityContext", std::move(pod_security), a);
  if (!spec.node_selector.empty()) put(pod, "nodeSelector", stringMap(spec.node_selector, a), a);
  if (auto tolerations = copyOf(class_doc, {"spec", "tolerations"}, a); tolerations.IsArray()) {
    put(pod, "tolerations", std::move(tolerations), a);
  }
  if (!spec.image->pull_secrets.empty()) {
    rapidjson::Value secrets(rapidjson::kArrayType);
    for (const auto& s : spec.image->pull_secrets) {
      auto ref = object();
      put(ref, "name", s.name, a);
      secrets.PushBack(ref, a);
    }
    put(pod, "imagePullSecrets", std::move(secrets), a);
  }
  rapidjson::Value containers(rapidjson::kArrayType);
  containers.PushBack(container, a);
  put(pod, "containers", std::move(containers), a);
  rapidjson::Value volumes(rapidjson::kArrayType);
  volumes.PushBack(emptyDirVolume("state", a), a);
  volumes.PushBack(emptyDirVolume("tmp", a), a);
  put(pod, "volumes", std::move(volumes), a);

  auto template_meta = object();
  put(template_meta, "labels", stringMap(c.labels, a), a);
  if (spec.plugin && !spec.plugin->sha256.empty()) {
    put(template_meta, "annotations",
        stringMap({{kPluginSha256Annotation, spec.plugin->sha256}}, a), a);
  }
  auto pod_template = object();
  put(pod_template, "metadata", std::move(template_meta), a);
  put(pod_template, "spec", std::move(pod), a);

  // Selectors are immutable: only what never changes for this Provider (not its class or
  // backend, which a class move changes). The namespace keeps two same-named Providers of
  // different namespaces apart when a class gathers workloads in one namespace.
  auto selector = object();
  put(selector, "matchLabels",
      stringMap({{"app.kubernetes.io/name", "banlieue"},
                 {kLabelProvider, c.provider.metadata.name},
                 {kLabelProviderNamespace, c.provider.metadata.namespace_}},
                a),
      a);
  auto deployment_spec = object();
  put(deployment_spec, "replicas", rapidjson::Value(std::max<int32_t>(1, spec.replicas)), a);
  put(deployment_spec, "selector", std::move(selector), a);
  // The old pods go before new ones start: a pod is ready only while it leads (ADR 0011), so a
  // new pod never becomes ready beside the old leader and the default rolling update would wait
  // on it forever. Not type Recreate: applied over a Deployment minted with the default
  // strategy, it is refused (the defaulted rollingUpdate stays, and Recreate forbids it).
  auto rolling = object();
  put(rolling, "maxSurge", rapidjson::Value(0), a);
  put(rolling, "maxUnavailable", std::string("100%"), a);
  auto strategy = object();
  put(strategy, "type", std::string("RollingUpdate"), a);
  put(strategy, "rollingUpdate", std::move(rolling), a);
  put(deployment_spec, "strategy", std::move(strategy), a);
  put(deployment_spec, "template", std::move(pod_template), a);
  put(m.body, "spec", std::move(deployment_spec), a);
  return m;
}

}  // namespace

std::vector<std::string> staleReplicaSets(const rapidjson::Value& replica_sets,
                                          const std::set<std::string>& live_deployment_uids) {
  std::vector<std::string> stale;
  const auto* items = sdk::json::find(&replica_sets, "items");
  if (items == nullptr || !items->IsArray()) return stale;
  for (const auto& rs : items->GetArray()) {
    const auto* owners = sdk::json::find(&rs, "metadata.ownerReferences");
    if (owners == nullptr || !owners->IsArray()) continue;
    for (const auto& owner : owners->GetArray()) {
      if (sdk::json::stringOr(&owner, "kind", "") != "Deployment" ||
          !sdk::json::boolean(&owner, "controller")) {
        continue;
      }
      if (live_deployment_uids.count(sdk::json::stringOr(&owner, "uid", "")) == 0) {
        stale.push_back(sdk::json::stringOr(&rs, "metadata.namespace", "") + "/" +
                        sdk::json::stringOr(&rs, "metadata.name", ""));
      }
    }
  }
  return stale;
}

const std::vector<kube::ResourceType>& mintedTypes() {
  static const std::vector<kube::ResourceType> types = {
      kube::resources::kServiceAccount, rbac::kRole, rbac::kRoleBinding, rbac::kClusterRoleBinding,
      kube::resources::kDeployment};
  return types;
}

std::string imageReference(const api::ContainerImage& image) {
  std::string out = image.repository;
  if (!image.tag.empty()) out += ":" + image.tag;
  if (!image.digest.empty()) out += "@" + image.digest;
  return out;
}

Status validateClassForWorkload(const api::ProviderClass& provider_class) {
  const auto& spec = provider_class.spec;
  if (spec.deployment == "External") return Status();
  if (!spec.image) {
    return error(
        Code::kFailedPrecondition, "InvalidImage",
        "ProviderClass " + provider_class.metadata.name + " is Managed but has no spec.image");
  }
  if (spec.image->repository.find_first_not_of(" \t") == std::string::npos) {
    return error(
        Code::kFailedPrecondition, "InvalidImage",
        "ProviderClass " + provider_class.metadata.name + " has a blank spec.image.repository");
  }
  if (spec.image->tag.empty() && spec.image->digest.empty()) {
    return error(Code::kFailedPrecondition, "InvalidImage",
                 "ProviderClass " + provider_class.metadata.name +
                     " names neither spec.image.tag nor spec.image.digest");
  }
  return Status();
}

std::vector<api::PolicyRule> providerRoleRules(const api::Provider& provider,
                                               const api::ProviderClass& provider_class,
                                               const std::string& workload_name,
                                               bool reads_user_data) {
  // resourceNames restrict get/update/patch (and list/watch narrowed to one name by a field
  // selector) but not create, whose name is unknown when authorizing: rules that carry names
  // never grant create, and the one create rule below is for Leases only.
  std::vector<api::PolicyRule> rules;
  if (reads_user_data) {
    // Any Secret of the namespace by name, never list or watch: besides its credentials, the
    // provider reads each machine's rendered userData Secret, whose names RBAC cannot know in
    // advance (docs/adr/0026). Only in namespaces where userData is enabled.
    rules.push_back(rule({""}, {"secrets"}, {"get"}));
  } else if (auto secrets = namesOf({credentialsSecret(provider), caSecret(provider)});
             !secrets.empty()) {
    rules.push_back(rule({""}, {"secrets"}, {"get"}, secrets));
  }
  auto config_maps = namesOf({caConfigMap(provider)});
  if (!config_maps.empty()) rules.push_back(rule({""}, {"configmaps"}, {"get"}, config_maps));
  rules.push_back(rule({"coordination.k8s.io"}, {"leases"}, {"create"}));
  rules.push_back(
      rule({"coordination.k8s.io"}, {"leases"}, {"get", "update", "patch"}, {workload_name}));
  rules.push_back(rule({"", "events.k8s.io"}, {"events"}, {"create", "patch"}));
  // The VirtualMachine behind a console request: its placement and its machine (ADR 0040).
  rules.push_back(rule({api::kGroup}, {"virtualmachines"}, {"get"}));
  if (provider_class.spec.deployment == "External") {
    // A host-resident provider authenticates as this ServiceAccount from outside the cluster:
    // it mints the SA's tokens itself and works on its own Provider only.
    rules.push_back(
        rule({api::kGroup}, {"providers"}, {"get", "list", "watch"}, {provider.metadata.name}));
    rules.push_back(rule({api::kGroup}, {"providers/status"}, {"get", "update", "patch"},
                         {provider.metadata.name}));
    rules.push_back(rule({""}, {"serviceaccounts/token"}, {"create"}, {workload_name}));
  }
  for (const auto& extra : provider_class.spec.additional_rules) rules.push_back(extra);
  return rules;
}

StatusOr<Workload> buildWorkload(const api::Provider& provider,
                                 const api::ProviderClass& provider_class,
                                 const WorkloadOptions& options, bool reads_user_data) {
  if (auto s = validateClassForWorkload(provider_class); !s.isOk()) return s;
  const auto& p = provider.metadata;
  if (p.name.size() > kMaxNameLength || p.namespace_.size() > kMaxNameLength) {
    // The Provider's name and namespace are label values on everything minted.
    return error(Code::kInvalidArgument, "ProviderNameTooLong",
                 "Provider " + p.namespace_ + "/" + p.name +
                     ": name and namespace must be at most 63 characters to label its workload");
  }
  if (provider_class.metadata.name.size() > kMaxNameLength) {
    return error(Code::kInvalidArgument, "ProviderClassNameTooLong",
                 "ProviderClass " + provider_class.metadata.name +
                     ": the name must be at most 63 characters to label its workloads");
  }
  Workload w;
  w.external = provider_class.spec.deployment == "External";
  w.cluster_name = clusterScopedName(provider_class.metadata.name, p.namespace_, p.name);
  w.provider_ns = p.namespace_;
  w.workload_ns = !w.external && !provider_class.spec.workload_namespace.empty()
                      ? provider_class.spec.workload_namespace
                      : p.namespace_;
  // Gathered in a shared namespace, same-named Providers of different namespaces would share
  // one ServiceAccount, and so each other's Secrets: the name then carries the namespace.
  w.name = w.workload_ns == p.namespace_ ? workloadName(provider_class.metadata.name, p.name)
                                         : w.cluster_name;
  Context c{provider,
            provider_class,
            options,
            w.name,
            w.workload_ns,
            workloadLabels(p.namespace_, p.name, provider_class.metadata.name,
                           provider_class.spec.backend, w.name)};

  w.objects.push_back(
      start(c, kube::resources::kServiceAccount, "ServiceAccount", w.name, w.workload_ns));
  w.objects.push_back(
      role(c, w.name, providerRoleRules(provider, provider_class, w.name, reads_user_data)));
  w.objects.push_back(binding(c, rbac::kRoleBinding, "RoleBinding", w.name, p.namespace_, "Role",
                              w.name, w.name, w.workload_ns));
  if (!w.external) {
    std::string import_name = w.name + "-import";
    w.objects.push_back(role(c, import_name, importRoleRules(provider)));
    w.objects.push_back(binding(c, rbac::kRoleBinding, "RoleBinding", import_name, p.namespace_,
                                "Role", import_name, kImportServiceAccount,
                                options.build_namespace));
    // The runtime's import Jobs: in the build namespace only (named for the cluster, since
    // Providers of every namespace bind there).
    w.objects.push_back(binding(c, rbac::kRoleBinding, "RoleBinding", w.cluster_name,
                                options.build_namespace, "ClusterRole", kProviderImportsClusterRole,
                                w.name, w.workload_ns));
  }
  w.objects.push_back(
      binding(c, rbac::kClusterRoleBinding, "ClusterRoleBinding", w.cluster_name, "", "ClusterRole",
              backendClusterRoleName(provider_class.spec.backend), w.name, w.workload_ns));
  // What every provider pod needs whatever its backend (docs/adr/0043).
  w.objects.push_back(binding(c, rbac::kClusterRoleBinding, "ClusterRoleBinding",
                              baseBindingName(w.cluster_name), "", "ClusterRole",
                              kProviderBaseClusterRole, w.name, w.workload_ns));
  if (!w.external) w.objects.push_back(deployment(c));
  for (auto& o : w.objects) {
    w.keep.emplace(o.type.plural, o.ns, o.name);
    auto& a = o.body.GetAllocator();
    auto annotations = object();
    put(annotations, kAppliedHashAnnotation,
        fmt::format("{:016x}", common::fnv1a64(api::serializeJson(o.body))), a);
    o.body["metadata"].AddMember("annotations", annotations, a);
  }
  return w;
}

}  // namespace banlieue::roles::provider_operator
