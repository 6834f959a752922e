// quill-run's quality modes: --perplexity over a text, and with
// --kl-divergence the comparison against a base artifact.
#pragma once

#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/device/Device.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <functional>
#include <memory>

namespace quill {

/// Makes a device for an artifact (the same kind as this run's).
using DeviceFactory = std::function<ErrorOr<std::unique_ptr<Device>>(const Artifact &)>;

/// Scores options.perplexityFile; returns the exit code.
int runQuality(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
               Device &device, const DeviceFactory &makeDevice);

} // namespace quill
