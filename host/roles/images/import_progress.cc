#include "host/roles/images/import_progress.h"

#include <charconv>
#include <cstdio>

namespace banlieue::roles::images {
namespace {

constexpr std::string_view kPrefix = "import progress: phase=";

// The value of `key=` in `fields`, up to the next space; empty when absent.
std::string_view valueOf(std::string_view fields, std::string_view key) {
  for (size_t at = 0; (at = fields.find(key, at)) != std::string_view::npos; at += key.size()) {
    if (at != 0 && fields[at - 1] != ' ') continue;
    auto start = at + key.size();
    auto end = fields.find(' ', start);
    return fields.substr(start, end == std::string_view::npos ? end : end - start);
  }
  return {};
}

std::optional<uint64_t> number(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string bytes(uint64_t n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(n);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof(out), unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return out;
}

}  // namespace

ImportProgress importProgress(std::string phase, uint64_t done, uint64_t total) {
  ImportProgress p{std::move(phase), done, total, 0};
  if (total > 0) p.percent = static_cast<int>(std::min<uint64_t>(done, total) * 100 / total);
  return p;
}

std::string importProgressLine(const ImportProgress& p) {
  return std::string(kPrefix) + p.phase + " bytesDone=" + std::to_string(p.bytes_done) +
         " bytesTotal=" + std::to_string(p.bytes_total) + " percent=" + std::to_string(p.percent);
}

std::optional<ImportProgress> lastImportProgress(std::string_view log) {
  auto at = log.rfind(kPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = log.substr(at + kPrefix.size());
  // The line ends at a newline, or at the quote closing a JSON log line's message.
  rest = rest.substr(0, std::min(rest.find('\n'), rest.find('"')));
  auto space = rest.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  ImportProgress p;
  p.phase = std::string(rest.substr(0, space));
  std::string_view fields = rest.substr(space + 1);
  auto done = number(valueOf(fields, "bytesDone="));
  auto total = number(valueOf(fields, "bytesTotal="));
  auto percent = number(valueOf(fields, "percent="));
  if (!done || !total || !percent || *percent > 100) return std::nullopt;
  p.bytes_done = *done;
  p.bytes_total = *total;
  p.percent = static_cast<int>(*percent);
  return p;
}

std::string describeImportProgress(const ImportProgress& p) {
  std::string text = p.phase + " " + std::to_string(p.percent) + "%";
  if (p.bytes_total > 0) text += " (" + bytes(p.bytes_done) + " of " + bytes(p.bytes_total) + ")";
  return text;
}

}  // namespace banlieue::roles::images
