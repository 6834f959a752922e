// Links the kernels' object file into a shared object with ld.lld.
#include "compiler/Target/CPU/CpuMachine.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>
#include <fstream>

namespace quill {

namespace {
/// Removes the temporary files of one link, whatever happens.
struct TempFiles {
  llvm::SmallString<128> object, library;
  ~TempFiles() {
    if (!object.empty())
      llvm::sys::fs::remove(object);
    if (!library.empty())
      llvm::sys::fs::remove(library);
  }
};
} // namespace

ErrorOr<std::vector<uint8_t>> linkSharedObject(const std::string &object) {
  TempFiles temp;
  if (llvm::sys::fs::createTemporaryFile("quill-kernels", "o", temp.object) ||
      llvm::sys::fs::createTemporaryFile("quill-kernels", "so", temp.library))
    return Status::error("cannot create temporary files for linking");
  {
    std::ofstream out(temp.object.c_str(), std::ios::binary);
    out.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!out)
      return Status::error("cannot write the kernels' object file");
  }
  const char *override = std::getenv("QUILL_LLD");
  std::string lld = override ? override : QUILL_LLD_PATH;
  // libm provides expf/sinf/cosf/powf for the kernels.
  llvm::SmallVector<llvm::StringRef> args = {lld,
                                             "-shared",
                                             "-o",
                                             temp.library,
                                             temp.object,
                                             "-z",
                                             "noexecstack",
                                             "--as-needed",
                                             "-L/usr/lib/x86_64-linux-gnu",
                                             "-L/lib/x86_64-linux-gnu",
                                             "-lm"};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(lld, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return Status::error("linking the kernels with " + lld + " failed" +
                         (message.empty() ? "" : ": " + message));
  auto buffer = llvm::MemoryBuffer::getFile(temp.library);
  if (!buffer)
    return Status::error("cannot read the linked kernel library");
  const char *start = (*buffer)->getBufferStart();
  return std::vector<uint8_t>(start, start + (*buffer)->getBufferSize());
}

} // namespace quill
