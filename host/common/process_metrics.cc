#include "host/common/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace banlieue {
namespace {

// /proc/self/stat's fields after the command name, which may itself hold spaces and ')'.
// fields[0] is the state (field 3 in proc(5)), so field N of proc(5) is fields[N - 3].
std::vector<std::string> selfStatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  auto end_of_name = line.rfind(')');
  if (end_of_name == std::string::npos) return {};
  std::istringstream rest(line.substr(end_of_name + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

double bootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double btime = 0;
      in >> btime;
      return btime;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

double openFileDescriptors() {
  std::error_code ec;
  double count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace

MetricsCollector exportProcessMetrics(MetricsRegistry& registry) {
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page_size = static_cast<double>(sysconf(_SC_PAGESIZE));
  auto& cpu = registry.counter("process_cpu_seconds_total",
                               "Total user and system CPU time spent in seconds.");
  auto& resident =
      registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  auto& virtual_memory =
      registry.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  auto& open_fds = registry.gauge("process_open_fds", "Number of open file descriptors.");
  auto& max_fds = registry.gauge("process_max_fds", "Maximum number of open file descriptors.");
  auto& start_time = registry.gauge("process_start_time_seconds",
                                    "Start time of the process since unix epoch in seconds.");
  auto stat = selfStatFields();
  if (stat.size() > 19) start_time.set(bootTimeSeconds() + std::stod(stat[19]) / ticks);

  return registry.addCollector(
      [&cpu, &resident, &virtual_memory, &open_fds, &max_fds, ticks, page_size] {
        auto fields = selfStatFields();
        if (fields.size() > 21) {
          // A counter only goes up: add what was spent since the last scrape.
          double spent = (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
          if (spent > cpu.value()) cpu.inc(spent - cpu.value());
          virtual_memory.set(std::stod(fields[20]));
          resident.set(std::stod(fields[21]) * page_size);
        }
        open_fds.set(openFileDescriptors());
        rlimit limit{};
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0) max_fds.set(static_cast<double>(limit.rlim_cur));
      });
}

}  // namespace banlieue
