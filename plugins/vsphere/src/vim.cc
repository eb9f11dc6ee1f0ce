#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/status.h>

#include <charconv>

namespace banlieue::vsphere {
namespace {

// Pages of this many objects keep one response bounded on a large vCenter.
constexpr int kPageSize = 1000;

std::string propSets(const std::vector<PropertySpec>& specs) {
  XmlWriter w;
  for (const auto& spec : specs) {
    w.open("propSet").text("type", spec.type);
    for (const auto& path : spec.paths) w.text("pathSet", path);
    w.close("propSet");
  }
  return w.str();
}

// A PropertyFilterSpec's content over every object of a ContainerView (not the view itself).
std::string viewFilterSpec(const MoRef& view, const std::vector<PropertySpec>& specs) {
  XmlWriter spec;
  spec.raw(propSets(specs));
  spec.open("objectSet").moref("obj", view).boolean("skip", true);
  spec.open("selectSet", "TraversalSpec")
      .text("name", "view")
      .text("type", "ContainerView")
      .text("path", "view")
      .boolean("skip", false)
      .close("selectSet");
  spec.close("objectSet");
  return spec.str();
}

std::string options() {
  XmlWriter w;
  w.open("options").integer("maxObjects", kPageSize).close("options");
  return w.str();
}

}  // namespace

pugi::xml_node ObjectContent::node(std::string_view path) const {
  auto it = props.find(path);
  return it == props.end() ? pugi::xml_node() : it->second;
}

std::string ObjectContent::text(std::string_view path) const {
  return node(path).text().get();
}

std::optional<int64_t> ObjectContent::integer(std::string_view path) const {
  pugi::xml_node n = node(path);
  if (!n) return std::nullopt;
  std::string_view s = n.text().get();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

bool ObjectContent::boolean(std::string_view path) const {
  return std::string_view(node(path).text().get()) == "true";
}

MoRef ObjectContent::moref(std::string_view path) const {
  pugi::xml_node n = node(path);
  return n ? readMoRef(n) : MoRef{};
}

std::vector<MoRef> ObjectContent::morefs(std::string_view path) const {
  std::vector<MoRef> out;
  for (pugi::xml_node c : children(node(path), "ManagedObjectReference")) {
    out.push_back(readMoRef(c));
  }
  return out;
}

std::string parseRetrieveResult(const pugi::xml_node& returnval, std::vector<ObjectContent>& out) {
  for (pugi::xml_node object : children(returnval, "objects")) {
    ObjectContent content;
    content.obj = readMoRef(child(object, "obj"));
    for (pugi::xml_node prop : children(object, "propSet")) {
      std::string name = childText(prop, "name").value_or("");
      if (!name.empty()) content.props[name] = child(prop, "val");
    }
    // A property the server could not read (no permission, a vanished object) arrives as
    // missingSet; leaving it out makes the caller see it as absent, which is what it is.
    if (!content.obj.empty()) out.push_back(std::move(content));
  }
  return childText(returnval, "token").value_or("");
}

namespace {

TaskState parseTaskState(const ObjectContent& task) {
  std::string state = task.text("info.state");
  if (state == "success") return TaskState::kSuccess;
  if (state == "error") return TaskState::kError;
  if (state == "running") return TaskState::kRunning;
  if (state == "queued") return TaskState::kQueued;
  throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                   "task " + task.obj.value + " has unknown state '" + state + "'");
}

}  // namespace

TaskInfo parseTaskInfo(const ObjectContent& task) {
  TaskInfo info;
  info.state = parseTaskState(task);
  if (pugi::xml_node error = task.node("info.error")) info.error = parseLocalizedFault(error);
  if (info.state == TaskState::kError && !info.error) {
    info.error = VimFault("MethodFault", "task " + task.obj.value + " failed without an error");
  }
  if (pugi::xml_node result = task.node("info.result"); result && result.attribute("type")) {
    info.result = readMoRef(result);
  }
  info.progress = static_cast<int>(task.integer("info.progress").value_or(0));
  return info;
}

PropertyResult Vim::retrieve(const std::string& spec_set, Deadline deadline) {
  const MoRef collector = client_.content(deadline).property_collector;
  PropertyResult result;
  SoapResponse page =
      client_.call("RetrievePropertiesEx", collector, spec_set + options(), deadline);
  std::string token = parseRetrieveResult(page.returnval(), result.objects);
  result.pages.push_back(std::move(page));
  while (!token.empty()) {
    XmlWriter w;
    w.text("token", token);
    SoapResponse next = client_.call("ContinueRetrievePropertiesEx", collector, w.str(), deadline);
    token = parseRetrieveResult(next.returnval(), result.objects);
    result.pages.push_back(std::move(next));
  }
  return result;
}

PropertyResult Vim::retrieveFromContainer(const MoRef& container,
                                          const std::vector<PropertySpec>& specs,
                                          Deadline deadline) {
  std::vector<std::string> types;
  types.reserve(specs.size());
  for (const auto& spec : specs) types.push_back(spec.type);
  MoRef view = createContainerView(container, types, deadline);
  XmlWriter spec;
  spec.open("specSet").raw(viewFilterSpec(view, specs)).close("specSet");
  PropertyResult result;
  try {
    result = retrieve(spec.str(), deadline);
  } catch (...) {
    try {
      destroyView(view, deadline);
    } catch (...) {  // the view dies with the session anyway
    }
    throw;
  }
  destroyView(view, deadline);
  return result;
}

MoRef Vim::createContainerView(const MoRef& container, const std::vector<std::string>& types,
                               Deadline deadline) {
  XmlWriter create;
  create.moref("container", container);
  for (const auto& type : types) create.text("type", type);
  create.boolean("recursive", true);
  return readMoRef(client_
                       .call("CreateContainerView", client_.content(deadline).view_manager,
                             create.str(), deadline)
                       .returnval());
}

void Vim::destroyView(const MoRef& view, Deadline deadline) {
  client_.call("DestroyView", view, {}, deadline);
}

MoRef Vim::createPropertyCollector(Deadline deadline) {
  return readMoRef(client_
                       .call("CreatePropertyCollector",
                             client_.content(deadline).property_collector, {}, deadline)
                       .returnval());
}

void Vim::destroyPropertyCollector(const MoRef& collector, Deadline deadline) {
  client_.call("DestroyPropertyCollector", collector, {}, deadline);
}

MoRef Vim::createViewFilter(const MoRef& collector, const MoRef& view,
                            const std::vector<PropertySpec>& specs, Deadline deadline) {
  XmlWriter w;
  w.open("spec").raw(viewFilterSpec(view, specs)).close("spec");
  // Whole values of the properties asked for: the feed only needs to know that they changed.
  w.boolean("partialUpdates", false);
  return readMoRef(client_.call("CreateFilter", collector, w.str(), deadline).returnval());
}

SoapResponse Vim::waitForUpdates(const MoRef& collector, const std::string& version,
                                 int max_wait_seconds, Deadline deadline) {
  XmlWriter w;
  w.text("version", version);
  w.open("options").integer("maxWaitSeconds", max_wait_seconds).close("options");
  return client_.call("WaitForUpdatesEx", collector, w.str(), deadline);
}

PropertyResult Vim::retrieveObjects(const std::vector<MoRef>& objects,
                                    const std::vector<PropertySpec>& specs, Deadline deadline) {
  XmlWriter spec;
  spec.open("specSet").raw(propSets(specs));
  for (const auto& object : objects) {
    spec.open("objectSet").moref("obj", object).boolean("skip", false).close("objectSet");
  }
  spec.close("specSet");
  return retrieve(spec.str(), deadline);
}

PropertyResult Vim::retrieveWithReferenced(const MoRef& object, const std::string& path,
                                           const std::vector<PropertySpec>& specs,
                                           Deadline deadline, bool include_object) {
  XmlWriter spec;
  spec.open("specSet").raw(propSets(specs));
  spec.open("objectSet").moref("obj", object).boolean("skip", !include_object);
  spec.open("selectSet", "TraversalSpec")
      .text("name", "referenced")
      .text("type", object.type)
      .text("path", path)
      .boolean("skip", false)
      .close("selectSet");
  spec.close("objectSet").close("specSet");
  return retrieve(spec.str(), deadline);
}

std::optional<MoRef> Vim::findByInstanceUuid(const std::string& uuid, Deadline deadline) {
  XmlWriter w;
  w.text("uuid", uuid).boolean("vmSearch", true).boolean("instanceUuid", true);
  SoapResponse r =
      client_.call("FindByUuid", client_.content(deadline).search_index, w.str(), deadline);
  pugi::xml_node rv = r.returnval();
  if (!rv) return std::nullopt;
  return readMoRef(rv);
}

std::optional<MoRef> Vim::findByInventoryPath(const std::string& path, Deadline deadline) {
  XmlWriter w;
  w.text("inventoryPath", path);
  SoapResponse r = client_.call("FindByInventoryPath", client_.content(deadline).search_index,
                                w.str(), deadline);
  pugi::xml_node rv = r.returnval();
  if (!rv) return std::nullopt;
  return readMoRef(rv);
}

TaskInfo Vim::taskInfo(const MoRef& task, Deadline deadline) {
  PropertyResult r = retrieveObjects(
      {task}, {{"Task", {"info.state", "info.error", "info.result", "info.progress"}}}, deadline);
  if (r.objects.empty()) {
    throw VimFault("ManagedObjectNotFound", "task " + task.value + " is gone");
  }
  return parseTaskInfo(r.objects.front());
}

std::vector<RecentTask> Vim::recentTasks(Deadline deadline) {
  const MoRef manager = client_.content(deadline).task_manager;
  if (manager.empty()) return {};  // an ESXi host without a TaskManager lists nothing
  PropertyResult result = retrieveWithReferenced(
      manager, "recentTask", {{"Task", {"info.state", "info.descriptionId", "info.eventChainId"}}},
      deadline, /*include_object=*/false);
  std::vector<RecentTask> tasks;
  for (const auto& o : result.objects) {
    if (o.obj.type != "Task") continue;
    tasks.push_back({o.obj, parseTaskState(o), o.text("info.descriptionId"),
                     o.integer("info.eventChainId").value_or(0)});
  }
  return tasks;
}

std::vector<CloneStarted> Vim::clonesStarted(Deadline deadline) {
  const MoRef manager = client_.content(deadline).event_manager;
  if (manager.empty()) return {};
  XmlWriter w;
  w.open("filter").text("eventTypeId", "VmBeingClonedEvent").integer("maxCount", 1000);
  w.close("filter");
  SoapResponse r = client_.call("QueryEvents", manager, w.str(), deadline);
  std::vector<CloneStarted> events;
  for (pugi::xml_node event : children(r.body, "returnval")) {
    if (xsiType(event) != "VmBeingClonedEvent") continue;
    CloneStarted started;
    try {
      started.chain_id = std::stoll(childText(event, "chainId").value_or("0"));
    } catch (const std::exception&) {
      continue;  // an event without a chain links to no task
    }
    started.dest_name = childText(event, "destName").value_or("");
    started.dest_folder = readMoRef(child(child(event, "destFolder"), "folder"));
    events.push_back(std::move(started));
  }
  return events;
}

MoRef Vim::startTask(std::string_view method, const MoRef& self, std::string_view arguments,
                     Deadline deadline) {
  MoRef task = readMoRef(client_.call(method, self, arguments, deadline).returnval());
  if (task.type != "Task" || task.empty()) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                     std::string(method) + " returned no Task");
  }
  return task;
}

MoRef Vim::createFolder(const MoRef& parent, const std::string& name, Deadline deadline) {
  XmlWriter w;
  w.text("name", name);
  return readMoRef(client_.call("CreateFolder", parent, w.str(), deadline).returnval());
}

void Vim::markAsTemplate(const MoRef& vm, Deadline deadline) {
  client_.call("MarkAsTemplate", vm, {}, deadline);
}

void Vim::makeDirectory(const std::string& datastore_path, const MoRef& datacenter,
                        Deadline deadline) {
  XmlWriter w;
  w.text("name", datastore_path)
      .moref("datacenter", datacenter)
      .boolean("createParentDirectories", true);
  client_.call("MakeDirectory", client_.content(deadline).file_manager, w.str(), deadline);
}

}  // namespace banlieue::vsphere
