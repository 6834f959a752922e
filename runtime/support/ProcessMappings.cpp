// Reads /proc/self/smaps for the mapping that holds an address.
#include "runtime/support/ProcessMappings.h"

#include <cstdint>
#include <cstdio>
#include <fstream>

namespace quill {

std::string MappingEntry::field(const std::string &name) const {
  for (const std::string &line : fields)
    if (line.rfind(name, 0) == 0)
      return line;
  return {};
}

size_t MappingEntry::kibField(const std::string &name) const {
  const std::string line = field(name);
  unsigned long long kib = 0;
  if (line.empty() || std::sscanf(line.c_str() + name.size(), " %llu kB", &kib) != 1)
    return 0;
  return size_t(kib) << 10;
}

MappingEntry mappingOf(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  MappingEntry entry;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long from = 0, to = 0;
    int pathAt = 0;
    // A header: "from-to perms offset dev inode [path]"; field lines start
    // with a name and a colon, never with a hexadecimal range.
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %*s %*s %*s %n", &from, &to, &pathAt) >= 2) {
      if (entry.found)
        return entry; // The entry we were in has ended.
      if (at >= from && at < to) {
        entry.found = true;
        entry.path = pathAt > 0 ? line.substr(size_t(pathAt)) : "";
      }
    } else if (entry.found) {
      entry.fields.push_back(line);
    }
  }
  return entry;
}

} // namespace quill
