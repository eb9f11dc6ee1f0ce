// Typed vim25 operations over SoapClient: PropertyCollector reads (batched over a
// ContainerView, paged with ContinueRetrievePropertiesEx), SearchIndex lookups, Task polling
// and the mutating methods the plugin uses. Each function is one or a fixed few round trips.
#pragma once

#include "plugins/vsphere/src/soap_client.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::vsphere {

// One object's requested properties; values are the <val> elements (owned by the result).
struct ObjectContent {
  MoRef obj;
  std::map<std::string, pugi::xml_node, std::less<>> props;

  std::string text(std::string_view path) const;
  std::optional<int64_t> integer(std::string_view path) const;
  bool boolean(std::string_view path) const;
  MoRef moref(std::string_view path) const;
  std::vector<MoRef> morefs(std::string_view path) const;  // ArrayOfManagedObjectReference
  pugi::xml_node node(std::string_view path) const;
};

struct PropertyResult {
  std::vector<SoapResponse> pages;
  std::vector<ObjectContent> objects;
};

// Which properties to read for objects of one type.
struct PropertySpec {
  std::string type;
  std::vector<std::string> paths;
};

enum class TaskState { kQueued, kRunning, kSuccess, kError };

struct TaskInfo {
  TaskState state = TaskState::kQueued;
  std::optional<VimFault> error;
  MoRef result;  // for tasks whose result is a moref (CloneVM_Task, CreateVM_Task)
  int progress = 0;
};

// A task of TaskManager.recentTask (recently completed, running or queued).
struct RecentTask {
  MoRef task;
  TaskState state = TaskState::kQueued;
  std::string description_id;  // "VirtualMachine.clone", ...
  int64_t event_chain_id = 0;  // the chain of the events the task posts
};

// A VmBeingClonedEvent: a clone that started, what it makes and where.
struct CloneStarted {
  int64_t chain_id = 0;
  std::string dest_name;
  MoRef dest_folder;
};

class Vim {
 public:
  explicit Vim(SoapClient& client) : client_(client) {}

  SoapClient& client() { return client_; }

  // Every object of the given types under `container` (recursively), in one
  // CreateContainerView + RetrievePropertiesEx (+ continuations) + DestroyView.
  PropertyResult retrieveFromContainer(const MoRef& container,
                                       const std::vector<PropertySpec>& specs, Deadline deadline);
  // Properties of specific objects, in one RetrievePropertiesEx (+ continuations).
  PropertyResult retrieveObjects(const std::vector<MoRef>& objects,
                                 const std::vector<PropertySpec>& specs, Deadline deadline);
  // Properties of `object` and of the objects its `path` property references (a VM and its
  // networks, say), in the same round trip; of the referenced objects only when
  // `include_object` is false (a TaskManager's recent tasks).
  PropertyResult retrieveWithReferenced(const MoRef& object, const std::string& path,
                                        const std::vector<PropertySpec>& specs, Deadline deadline,
                                        bool include_object = true);

  // A view of every object of `types` under `container` (recursively); it lives until
  // destroyView or the end of the session.
  MoRef createContainerView(const MoRef& container, const std::vector<std::string>& types,
                            Deadline deadline);
  void destroyView(const MoRef& view, Deadline deadline);

  // The change feed's pieces: a PropertyCollector of the session's own (its filters and update
  // versions are apart from every other caller's), a filter on it over the objects of a
  // ContainerView, and one WaitForUpdatesEx. A collector dies with its session.
  MoRef createPropertyCollector(Deadline deadline);
  void destroyPropertyCollector(const MoRef& collector, Deadline deadline);
  MoRef createViewFilter(const MoRef& collector, const MoRef& view,
                         const std::vector<PropertySpec>& specs, Deadline deadline);
  // The UpdateSet (the response's returnval; empty when nothing changed within
  // `max_wait_seconds`). Version "" asks for the current state of every object the
  // collector's filters cover; 0 seconds answers at once.
  SoapResponse waitForUpdates(const MoRef& collector, const std::string& version,
                              int max_wait_seconds, Deadline deadline);

  std::optional<MoRef> findByInstanceUuid(const std::string& uuid, Deadline deadline);
  std::optional<MoRef> findByInventoryPath(const std::string& path, Deadline deadline);

  TaskInfo taskInfo(const MoRef& task, Deadline deadline);
  // TaskManager.recentTask with each task's state, description and event chain, in one
  // RetrievePropertiesEx.
  std::vector<RecentTask> recentTasks(Deadline deadline);
  // The newest VmBeingClonedEvents (at most 1000), in one QueryEvents.
  std::vector<CloneStarted> clonesStarted(Deadline deadline);

  // Starts a *_Task method and returns the Task.
  MoRef startTask(std::string_view method, const MoRef& self, std::string_view arguments,
                  Deadline deadline);
  MoRef createFolder(const MoRef& parent, const std::string& name, Deadline deadline);
  void markAsTemplate(const MoRef& vm, Deadline deadline);
  void makeDirectory(const std::string& datastore_path, const MoRef& datacenter, Deadline deadline);

 private:
  PropertyResult retrieve(const std::string& spec_set, Deadline deadline);

  SoapClient& client_;
};

// Parses one RetrievePropertiesEx / ContinueRetrievePropertiesEx returnval into `out`;
// returns the continuation token (empty on the last page). Exposed for the recorded-response
// tests and the fuzz target.
std::string parseRetrieveResult(const pugi::xml_node& returnval, std::vector<ObjectContent>& out);
TaskInfo parseTaskInfo(const ObjectContent& task);

}  // namespace banlieue::vsphere
