// quill-serve's flags.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>

namespace quill::serve {

struct ServeOptions {
  std::string artifactPath;
  std::string host = "127.0.0.1";
  int32_t port = 8080;         ///< 0: any free port.
  int32_t threads = 0;         ///< Kernel worker threads; 0: every core.
  int32_t batch = 0;           ///< Most sequences at once; 0: the artifact's batch rows.
  int64_t kvBudgetMiB = 0;     ///< 0: enough for every row to reach the context, within 1 GiB.
  int32_t maxQueue = 128;      ///< Requests waiting for admission before 429.
  std::string apiKey;          ///< When set, every /v1 route needs it as a bearer token.
  double timeoutSeconds = 600; ///< A request's wall time; 0: unbounded.
  std::string chatTemplateFile;
  std::string modelName; ///< Default: the artifact's file name without .qm.
  int64_t maxBodyBytes = int64_t(8) << 20;
  bool verbose = false;
  bool mmapWeights = false; ///< --mmap: weights read in place, not copied into huge pages.
  bool help = false;
};

const char *serveUsage();

/// The flags of argv; errors name the flag and its value in one line.
ErrorOr<ServeOptions> parseServeOptions(int argc, char **argv);

} // namespace quill::serve
