// The fuzz input as a file, for parsers that take a path: one memfd per
// process, rewritten for every input and named through /proc/self/fd.
#pragma once

#include "compiler/Import/ModelSource.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace quill::fuzz {

/// Replaces the memfd's contents with `data`; returns a path that opens it.
inline std::string inputPath(const uint8_t *data, size_t size) {
  static const int fd = memfd_create("quill-fuzz-input", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0)
    std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = pwrite(fd, data + done, size - done, off_t(done));
    if (n <= 0)
      std::abort();
    done += size_t(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

/// What quill-compile does with an opened model, for inputs small enough:
/// every tensor read as fp32, and the model's own tokenizer.
inline void exerciseModel(const ModelSource &model) {
  for (const ImportedTensor &tensor : model.tensors()) {
    if (tensor.numElements() > (1 << 20))
      continue;
    std::vector<float> values(size_t(tensor.numElements()));
    (void)model.readTensor(tensor, values.data());
  }
  (void)model.tokenizer();
}

} // namespace quill::fuzz
