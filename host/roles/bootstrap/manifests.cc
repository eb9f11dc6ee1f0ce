#include "host/roles/bootstrap/manifests.h"

#include "host/api/user_data_contract.h"

#include "host/api/crd.h"
#include "host/api/kinds.h"
#include "host/common/version.h"
#include "host/roles/common/backend_roles.h"

#include <banlieue/sdk/json.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <set>

namespace banlieue::roles::bootstrap {
namespace {

using Strings = std::vector<std::string>;

// A JSON string literal.
std::string q(const std::string& s) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return {buffer.GetString(), buffer.GetSize()};
}

std::string list(const Strings& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ",") + q(items[i]);
  return out + "]";
}

std::string rule(const Strings& groups, const Strings& resources, const Strings& verbs) {
  return "{\"apiGroups\":" + list(groups) + ",\"resources\":" + list(resources) +
         ",\"verbs\":" + list(verbs) + "}";
}

std::string rules(const Strings& each) {
  std::string out = "[";
  for (size_t i = 0; i < each.size(); ++i) out += (i == 0 ? "" : ",") + each[i];
  return out + "]";
}

std::string labels(const std::string& component) {
  std::string out =
      R"({"app.kubernetes.io/name":"banlieue","app.kubernetes.io/part-of":"banlieue",)"
      R"("app.kubernetes.io/managed-by":"banlieue-bootstrap")";
  if (!component.empty()) out += ",\"app.kubernetes.io/component\":" + q(component);
  return out + "}";
}

std::string meta(const std::string& name, const std::string& ns, const std::string& component) {
  std::string out = "{\"name\":" + q(name);
  if (!ns.empty()) out += ",\"namespace\":" + q(ns);
  return out + ",\"labels\":" + labels(component) + "}";
}

rapidjson::Document parse(const std::string& text) {
  return sdk::json::parse(text, "bootstrap manifest");
}

const Strings kRead = {"get", "list", "watch"};
const Strings kStatusWrite = {"get", "update", "patch"};
const Strings kAll = {"get", "list", "watch", "create", "update", "patch", "delete"};
const Strings kEventWrite = {"create", "patch"};

// banlieue's own infrastructure kinds by group.
std::map<std::string, Strings> builtinInfraPlurals() {
  std::map<std::string, Strings> by_group;
  for (const auto& k : api::builtinKinds()) {
    if (k.group == api::kInfraGroup) by_group[k.group].push_back(k.plural);
  }
  return by_group;
}

// The plurals of the infra kinds one plugin serves (banlieue's built-ins or its own CRDs).
std::map<std::string, Strings> servedPlurals(const DiscoveredPlugin& p) {
  std::map<std::string, Strings> by_group;
  for (const auto& gvk : p.manifest.infrastructure) {
    for (const auto& k : api::builtinKinds()) {
      if (k.group == gvk.group && k.kind == gvk.kind) by_group[k.group].push_back(k.plural);
    }
    for (const auto& crd : p.crds) {
      const auto* spec = sdk::json::member(&crd, "spec");
      const auto* names = sdk::json::member(spec, "names");
      if (sdk::json::stringOr(spec, "group") == gvk.group &&
          sdk::json::stringOr(names, "kind") == gvk.kind) {
        by_group[gvk.group].push_back(sdk::json::stringOr(names, "plural"));
      }
    }
  }
  return by_group;
}

Strings withSuffix(const Strings& plurals, const std::string& suffix) {
  Strings out;
  for (const auto& p : plurals) out.push_back(p + suffix);
  return out;
}

// What a provider pod of one backend needs on that backend's infrastructure kinds
// (banlieue-provider-<backend>; a third party ships the same for its kinds).
Strings backendProviderRules(const DiscoveredPlugin& p) {
  Strings out;
  for (const auto& [group, plurals] : servedPlurals(p)) {
    out.push_back(rule({group}, plurals, {"get", "list", "watch", "update", "patch"}));
    out.push_back(rule({group}, withSuffix(plurals, "/status"), kStatusWrite));
    out.push_back(rule({group}, withSuffix(plurals, "/finalizers"), {"update"}));
  }
  return out;
}

// Making and removing a backend's infrastructure objects: the controller creates them for VMs,
// the operator deletes them with their Provider (banlieue-infrastructure-<backend>).
Strings backendInfrastructureRules(const DiscoveredPlugin& p) {
  Strings out;
  for (const auto& [group, plurals] : servedPlurals(p)) {
    out.push_back(rule({group}, plurals, kAll));
    out.push_back(rule({group}, withSuffix(plurals, "/status"), kStatusWrite));
  }
  return out;
}

// banlieue's own infrastructure kinds, every verb: what Cluster API's manager needs to make
// machines from templates, read clusters and delete machines (banlieue-infrastructure).
Strings builtinInfrastructureRules() {
  Strings out;
  for (const auto& [group, plurals] : builtinInfraPlurals()) {
    out.push_back(rule({group}, plurals, kAll));
    out.push_back(rule({group}, withSuffix(plurals, "/status"), kStatusWrite));
  }
  return out;
}

// What every provider pod needs whatever its backend: images, its Provider and class, events
// (banlieue-provider). Its import Jobs are granted in the build namespace only
// (kProviderImportsRole).
Strings providerBaseRules() {
  Strings out;
  out.push_back(rule({api::kGroup}, {"vmimages"}, {"get", "list", "watch", "update", "patch"}));
  // Its finalizer on the VMImages it imports (docs/adr/0037).
  out.push_back(rule({api::kGroup}, {"vmimages/finalizers"}, {"update"}));
  out.push_back(rule({api::kGroup}, {"vmimages/status", "providers/status"}, kStatusWrite));
  out.push_back(rule({api::kGroup}, {"providers", "providerclasses"}, kRead));
  // What it loaded, on its class's status.plugin (docs/adr/0043).
  out.push_back(rule({api::kGroup}, {"providerclasses/status"}, {"get", "patch"}));
  // The snapshots and restores bound to it (docs/adr/0039), its finalizer on snapshots.
  out.push_back(rule({api::kGroup}, {"virtualmachinesnapshots", "virtualmachinerestores"},
                     {"get", "list", "watch", "update", "patch"}));
  out.push_back(rule({api::kGroup},
                     {"virtualmachinesnapshots/status", "virtualmachinerestores/status"},
                     kStatusWrite));
  out.push_back(rule({api::kGroup}, {"virtualmachinesnapshots/finalizers"}, {"update"}));
  // Its console server asks the apiserver who connects and whether they may (docs/adr/0040).
  out.push_back(rule({"authentication.k8s.io"}, {"tokenreviews"}, {"create"}));
  out.push_back(rule({"authorization.k8s.io"}, {"subjectaccessreviews"}, {"create"}));
  out.push_back(rule({""}, {"events"}, kEventWrite));
  out.push_back(rule({"events.k8s.io"}, {"events"}, kEventWrite));
  return out;
}

// A provider's import Jobs, their pods (exit statuses) and logs (progress), bound in the build
// namespace only.
// Jobs there can run as banlieue-image-import alone: the imagebuilder lives elsewhere.
Strings providerImportsRules() {
  return {rule({"batch"}, {"jobs"}, {"get", "list", "watch", "create", "delete"}),
          rule({""}, {"pods"}, kRead),
          // The import's progress: the tail of a running import pod's log.
          rule({""}, {"pods/log"}, {"get"})};
}

// The imagebuilder, cluster-wide: read VMImages, write only their status.buildArtifact.
Strings imageBuilderRules() {
  return {rule({api::kGroup}, {"vmimages"}, kRead),
          rule({api::kGroup}, {"vmimages/status"}, kStatusWrite),
          rule({""}, {"events"}, kEventWrite), rule({"events.k8s.io"}, {"events"}, kEventWrite)};
}

// The imagebuilder in the build namespace: its OSArtifacts (deleted on a rebuild), the
// cloudConfigs Secrets it reads, the merged Secrets it applies, and its checksum Jobs.
Strings imageBuilderBuildRules() {
  return {rule({"build.kairos.io"}, {"osartifacts"}, kAll),
          rule({""}, {"secrets"}, {"get", "create", "update", "patch"}),
          // The checksum Job per build (docs/adr/0052) and its pod's termination message.
          rule({"batch"}, {"jobs"}, {"get", "list", "watch", "create"}),
          rule({""}, {"pods"}, {"list"})};
}

// The controller's own rules (banlieue-controller-base); banlieue-controller aggregates them
// with every backend's banlieue-infrastructure-<backend>.
Strings controllerRules() {
  Strings out = {
      rule({api::kGroup},
           {"virtualmachines", "vmclasses", "vmimages", "providers", "providerclasses",
            "virtualmachinepools", "virtualmachineclaims", "virtualmachinesnapshots",
            "virtualmachinerestores"},
           kRead),
      // Cluster API's Machines and Clusters, read only: which infrastructure machines Cluster
      // API made, and where they go (docs/adr/0050). Its bootstrap Secrets are read (type and
      // revision) only in the userData namespaces, through banlieue-controller-userdata.
      rule({"cluster.x-k8s.io"}, {"machines", "clusters"}, kRead),
      // Binds snapshots and restores to their Provider with a label (docs/adr/0039).
      rule({api::kGroup}, {"virtualmachinesnapshots", "virtualmachinerestores"}, {"patch"}),
      // Pools create and delete their member VMs and re-parent them to claims.
      rule({api::kGroup}, {"virtualmachines"}, {"create", "update", "patch", "delete"}),
      // An ownerReference with blockOwnerDeletion needs update on its owner's finalizers where
      // OwnerReferencesPermissionEnforcement is on: infra CRs' VMs, members' pools and claims.
      rule({api::kGroup},
           {"virtualmachines/finalizers", "virtualmachinepools/finalizers",
            "virtualmachineclaims/finalizers"},
           {"update"}),
      rule({api::kGroup},
           {"virtualmachines/status", "vmimages/status", "vmclasses/status",
            "virtualmachinepools/status", "virtualmachineclaims/status",
            "virtualmachinesnapshots/status", "virtualmachinerestores/status"},
           kStatusWrite),
  };
  // banlieue's own infrastructure kinds (VSphereCluster, the machine templates); each
  // backend's kinds arrive by aggregation (banlieue-infrastructure-<backend>).
  for (const auto& [group, plurals] : builtinInfraPlurals()) {
    out.push_back(rule({group}, plurals, kAll));
    out.push_back(rule({group}, withSuffix(plurals, "/status"), kStatusWrite));
  }
  out.push_back(rule({""}, {"events"}, kEventWrite));
  out.push_back(rule({"events.k8s.io"}, {"events"}, kEventWrite));
  return out;
}

// The operator mints a Role, RoleBindings and ClusterRoleBindings per Provider. RBAC lets a
// subject grant only what it holds (no escalate or bind verbs here), so banlieue-operator is
// the union of what it grants plus what it manages: these rules (banlieue-operator-base) and,
// by aggregation, every backend's two roles.
Strings operatorRules() {
  Strings out = {
      rule({api::kGroup}, {"providers", "providerclasses"}, kRead),
      rule({api::kGroup}, {"providers", "providerclasses"}, {"update", "patch"}),
      rule({api::kGroup}, {"providers/finalizers", "providerclasses/finalizers"}, {"update"}),
      // A deleted Provider's finalizer on the VMImages it imported (docs/adr/0037).
      rule({api::kGroup}, {"vmimages"}, {"list", "patch"}),
      // Granted to provider workloads in their Provider's namespace: the VM behind a console.
      rule({api::kGroup}, {"virtualmachines"}, {"get"}),
      rule({api::kGroup}, {"providers/status", "providerclasses/status"}, kStatusWrite),
      rule({"apps"}, {"deployments"}, kAll),
      // ReplicaSets a Deployment left when the garbage collector missed its deletion.
      rule({"apps"}, {"replicasets"}, {"list", "delete"}),
      rule({""}, {"serviceaccounts"}, kAll),
      rule({"rbac.authorization.k8s.io"}, {"roles", "rolebindings", "clusterrolebindings"}, kAll),
      rule({"rbac.authorization.k8s.io"}, {"clusterroles"}, {"get", "list", "watch"}),
      // Granted to provider workloads by resourceNames: the credentials Secret, CA sources,
      // their own Lease and token.
      rule({""}, {"secrets", "configmaps"}, {"get"}),
      rule({""}, {"serviceaccounts/token"}, {"create"}),
      rule({"coordination.k8s.io"}, {"leases"}, {"get", "create", "update", "patch"}),
      rule({""}, {"events"}, kEventWrite),
      rule({"events.k8s.io"}, {"events"}, kEventWrite),
  };
  // It binds banlieue-provider per Provider; each backend's banlieue-provider-<backend> and
  // banlieue-infrastructure-<backend> arrive by aggregation.
  for (auto& r : providerBaseRules()) out.push_back(std::move(r));
  return out;
}

std::string clusterRole(const std::string& name, const std::string& component,
                        const Strings& rule_list, const Strings& aggregate_to = {}) {
  std::string metadata = meta(name, "", component);
  for (const auto& label : aggregate_to) {
    metadata.insert(metadata.size() - 2, "," + q(label) + ":\"true\"");
  }
  return R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":)" +
         metadata + ",\"rules\":" + rules(rule_list) + "}";
}

// A ClusterRole whose rules the controller-manager fills from every ClusterRole carrying
// `label` (docs/adr/0043). No `rules`: applying any would fight the controller-manager's fill.
std::string aggregatedClusterRole(const std::string& name, const std::string& component,
                                  const std::string& label) {
  return R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":)" +
         meta(name, "", component) +
         R"(,"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{)" + q(label) +
         R"(:"true"}}]}})";
}

std::string binding(const char* kind, const std::string& name, const std::string& ns,
                    const std::string& component, const char* role_kind, const std::string& role,
                    const std::string& sa, const std::string& sa_ns) {
  return R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":")" + std::string(kind) +
         R"(","metadata":)" + meta(name, ns, component) +
         R"(,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":")" + role_kind +
         R"(","name":)" + q(role) + R"(},"subjects":[{"kind":"ServiceAccount","name":)" + q(sa) +
         R"(,"namespace":)" + q(sa_ns) + "}]}";
}

// Leader election Leases live in the install namespace only.
std::string leaseRole(const std::string& name, const std::string& ns,
                      const std::string& component) {
  return R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":)" +
         meta(name, ns, component) + ",\"rules\":" +
         rules({rule({"coordination.k8s.io"}, {"leases"},
                     {"get", "list", "watch", "create", "update", "patch"})}) +
         "}";
}

std::string deployment(const std::string& name, const std::string& ns, const std::string& component,
                       const std::string& image, const Strings& args) {
  std::string selector =
      R"({"app.kubernetes.io/name":"banlieue","app.kubernetes.io/component":)" + q(component) + "}";
  std::string probe = [](const char* path, int delay, int period, int timeout) {
    return R"({"httpGet":{"path":")" + std::string(path) +
           R"(","port":"health"},"initialDelaySeconds":)" + std::to_string(delay) +
           ",\"periodSeconds\":" + std::to_string(period) +
           ",\"timeoutSeconds\":" + std::to_string(timeout) + ",\"failureThreshold\":3}";
  }("/readyz", 2, 5, 2);
  std::string liveness = R"({"httpGet":{"path":"/healthz","port":"health"},)"
                         R"("initialDelaySeconds":10,"periodSeconds":30,"timeoutSeconds":3,)"
                         R"("failureThreshold":3})";
  // The old pod goes before the new one starts: a pod is ready only while it leads, so the
  // default rolling update would wait forever for the new pod beside the old leader. Not type
  // Recreate, which an apply over an earlier install's defaulted rollingUpdate cannot switch to.
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":)" + meta(name, ns, component) +
         R"(,"spec":{"replicas":1,"strategy":{"type":"RollingUpdate",)"
         R"("rollingUpdate":{"maxSurge":0,"maxUnavailable":"100%"}},"selector":{"matchLabels":)" +
         selector + R"(},"template":{"metadata":{"labels":)" + labels(component) +
         R"(},"spec":{"serviceAccountName":)" + q(name) +
         R"(,"terminationGracePeriodSeconds":30,)"
         R"("securityContext":{"runAsNonRoot":true,"runAsUser":65532,"runAsGroup":65532,)"
         R"("fsGroup":65532,"seccompProfile":{"type":"RuntimeDefault"}},)"
         R"("containers":[{"name":)" +
         q(component) + R"(,"image":)" + q(image) + R"(,"imagePullPolicy":"IfNotPresent","args":)" +
         list(args) +
         R"(,"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},)"
         R"({"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}],)"
         R"("ports":[{"name":"metrics","containerPort":8080,"protocol":"TCP"},)"
         R"({"name":"health","containerPort":8081,"protocol":"TCP"}],)"
         R"("readinessProbe":)" +
         probe + R"(,"livenessProbe":)" + liveness +
         R"(,"resources":{"requests":{"cpu":"50m","memory":"128Mi"},)"
         R"("limits":{"cpu":"1","memory":"512Mi"}},)"
         R"("securityContext":{"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":true,)"
         R"("capabilities":{"drop":["ALL"]},"seccompProfile":{"type":"RuntimeDefault"}}}]}}}})";
}

std::string providerClass(const DiscoveredPlugin& p, const BootstrapOptions& options) {
  auto ref = parseImageReference(options.image);
  std::string image = "{\"repository\":" + q(ref.repository);
  if (!ref.tag.empty()) image += ",\"tag\":" + q(ref.tag);
  if (!ref.digest.empty()) image += ",\"digest\":" + q(ref.digest);
  image += ",\"pullPolicy\":\"IfNotPresent\"}";
  std::string plugin_path =
      options.image_plugin_dir + "/" + p.manifest.directory.filename().string();
  return R"({"apiVersion":"banlieue.io/v1alpha1","kind":"ProviderClass","metadata":)" +
         meta(p.manifest.name, "", "provider-" + p.manifest.name) +
         ",\"spec\":{\"backend\":" + q(p.manifest.name) +
         ",\"plugin\":{\"path\":" + q(plugin_path) + "},\"image\":" + image +
         ",\"deployment\":\"Managed\"}}";
}

}  // namespace

std::vector<rapidjson::Document> backendClusterRoles(const DiscoveredPlugin& p) {
  const std::string& backend = p.manifest.name;
  std::vector<rapidjson::Document> out;
  out.push_back(parse(clusterRole(backendProviderClusterRole(backend), "provider-" + backend,
                                  backendProviderRules(p), {kAggregateToOperatorLabel})));
  out.push_back(parse(clusterRole(
      backendInfrastructureClusterRole(backend), "provider-" + backend,
      backendInfrastructureRules(p),
      {kAggregateToControllerLabel, kAggregateToOperatorLabel, kAggregateToCapiManagerLabel})));
  return out;
}

std::string defaultImage() {
  return std::string("localhost/banlieue:") + kVersion;
}

ImageReference parseImageReference(const std::string& image) {
  ImageReference ref;
  std::string rest = image;
  if (auto at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
  }
  auto slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
  }
  ref.repository = rest;
  return ref;
}

std::vector<rapidjson::Document> buildCrds(const std::vector<DiscoveredPlugin>& plugins) {
  std::vector<rapidjson::Document> out;
  for (const auto& kind : api::builtinKinds()) out.push_back(api::buildCrd(kind));
  for (const auto& p : plugins) {
    for (const auto& crd : p.crds) {
      auto& copy = out.emplace_back();
      copy.CopyFrom(crd, copy.GetAllocator());
    }
  }
  return out;
}

std::vector<rapidjson::Document> buildBootstrapObjects(
    const BootstrapOptions& options, const std::vector<DiscoveredPlugin>& plugins) {
  const std::string& ns = options.namespace_;
  const std::string& build_ns = options.build_namespace;
  std::vector<rapidjson::Document> out;
  out.push_back(
      parse(R"({"apiVersion":"v1","kind":"Namespace","metadata":)" + meta(ns, "", "") + "}"));
  out.push_back(parse(R"({"apiVersion":"v1","kind":"Namespace","metadata":)" +
                      meta(build_ns, "", "imagebuild") + "}"));
  if (options.crds) {
    for (auto& crd : buildCrds(plugins)) out.push_back(std::move(crd));
  }

  // Shared provider ClusterRoles: the operator binds them per Provider but never creates them.
  // Each backend's two are the ones a third party ships for its own (docs/adr/0043).
  out.push_back(parse(clusterRole(kProviderBaseClusterRole, "provider", providerBaseRules())));
  // Cluster API's manager reaches banlieue's own infrastructure kinds (docs/adr/0044).
  out.push_back(parse(clusterRole(kBuiltinInfrastructureClusterRole, "controller",
                                  builtinInfrastructureRules(), {kAggregateToCapiManagerLabel})));
  for (const auto& p : plugins) {
    for (auto& role : backendClusterRoles(p)) out.push_back(std::move(role));
  }
  out.push_back(parse(clusterRole(kProviderImportsRole, "image-import", providerImportsRules())));

  // The import Jobs' identity: the VMImage cluster-wide; the operator adds per Provider a Role
  // for that Provider and the Secret/ConfigMap names its connection uses (docs/adr/0015).
  const std::string import_sa = "banlieue-image-import";
  out.push_back(parse(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":)" +
                      meta(import_sa, build_ns, "image-import") + "}"));
  out.push_back(
      parse(clusterRole(import_sa, "image-import", {rule({api::kGroup}, {"vmimages"}, {"get"})})));
  out.push_back(parse(binding("ClusterRoleBinding", import_sa, "", "image-import", "ClusterRole",
                              import_sa, import_sa, build_ns)));

  struct Role {
    std::string name;
    std::string component;
    Strings cluster_rules;
    Strings args;
    // Set: the role's ClusterRole aggregates <name>-base (cluster_rules) and every
    // ClusterRole carrying this label.
    std::string aggregate_label;
  };
  // The controller's --namespace would narrow what it watches, so only its Lease is placed;
  // the operator's --namespace is where its Lease lives (banlieue-spec 4.1, 4.2). The operator
  // reads the plugins' manifests where the image holds them and passes the same directory to
  // the provider pods it mints.
  const Role roles[] = {
      {kControllerName,
       "controller",
       controllerRules(),
       {"controller", "--leader-election-namespace", ns},
       kAggregateToControllerLabel},
      {kOperatorName,
       "operator",
       operatorRules(),
       {"operator", "--namespace", ns, "--plugin-dir", options.image_plugin_dir,
        "--image-plugin-dir", options.image_plugin_dir, "--build-namespace", build_ns},
       kAggregateToOperatorLabel},
      {kImageBuilderName,
       "imagebuilder",
       imageBuilderRules(),
       {"imagebuilder", "--build-namespace", build_ns, "--leader-election-namespace", ns,
        "--job-image", options.image}}};
  for (const auto& r : roles) {
    out.push_back(parse(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":)" +
                        meta(r.name, ns, r.component) + "}"));
    if (!r.aggregate_label.empty()) {
      out.push_back(parse(aggregatedClusterRole(r.name, r.component, r.aggregate_label)));
      out.push_back(
          parse(clusterRole(r.name + "-base", r.component, r.cluster_rules, {r.aggregate_label})));
    } else {
      out.push_back(parse(clusterRole(r.name, r.component, r.cluster_rules)));
    }
    out.push_back(parse(
        binding("ClusterRoleBinding", r.name, "", r.component, "ClusterRole", r.name, r.name, ns)));
    out.push_back(parse(leaseRole(r.name + "-leader-election", ns, r.component)));
    out.push_back(parse(binding("RoleBinding", r.name + "-leader-election", ns, r.component, "Role",
                                r.name + "-leader-election", r.name, ns)));
    if (r.name == kControllerName) {
      // userData Secrets and ConfigMaps: readable only in the namespaces named here, where the
      // controller also writes each VM's rendered userData Secret (docs/adr/0026).
      const std::string userdata = api::kUserDataRoleBinding;  // also its ClusterRole's name
      out.push_back(parse(clusterRole(userdata, r.component,
                                      {rule({""}, {"secrets"}, {"get", "create", "patch"}),
                                       rule({""}, {"configmaps"}, {"get"})})));
      for (const auto& user_ns : options.userdata_namespaces) {
        out.push_back(parse(binding("RoleBinding", userdata, user_ns, r.component, "ClusterRole",
                                    userdata, r.name, ns)));
      }
    }
    if (r.name == kOperatorName) {
      // The operator binds kProviderImportsRole per Provider in the build namespace, so it
      // holds it there (and nowhere else).
      out.push_back(parse(binding("RoleBinding", r.name + "-imports", build_ns, r.component,
                                  "ClusterRole", kProviderImportsRole, r.name, ns)));
    }
    if (r.name == kImageBuilderName) {
      std::string build = r.name + "-build";
      out.push_back(parse(clusterRole(build, r.component, imageBuilderBuildRules())));
      out.push_back(parse(
          binding("RoleBinding", build, build_ns, r.component, "ClusterRole", build, r.name, ns)));
    }
    // /metrics on loopback, written out so the choice shows in the manifest: a platform team
    // that scrapes from the cluster changes it to 0.0.0.0, behind a NetworkPolicy.
    Strings args = r.args;
    args.insert(args.end(), {"--metrics-bind-address", "127.0.0.1"});
    out.push_back(parse(deployment(r.name, ns, r.component, options.image, args)));
  }

  if (options.provider_classes) {
    for (const auto& p : plugins) out.push_back(parse(providerClass(p, options)));
  }
  return out;
}

}  // namespace banlieue::roles::bootstrap
