// What Linux says about the mapping that holds an address
// (/proc/self/smaps): the file behind it, and its fields (AnonHugePages,
// VmFlags, ...). For reports and tests of where memory lives.
#pragma once

#include <string>
#include <vector>

namespace quill {

/// One /proc/self/smaps entry.
struct MappingEntry {
  bool found = false;
  /// The file mapped there ("" for anonymous memory, or "[heap]" and the like).
  std::string path;
  /// Its field lines, as smaps writes them ("AnonHugePages:  2048 kB").
  std::vector<std::string> fields;

  /// The line of the field `name` (with its colon: "VmFlags:"), or "".
  std::string field(const std::string &name) const;
  /// A "NAME: N kB" field in bytes (0 when absent).
  size_t kibField(const std::string &name) const;
};

/// The entry of the mapping that holds `address`; `found` false when none
/// does (or smaps cannot be read: not Linux).
MappingEntry mappingOf(const void *address);

} // namespace quill
