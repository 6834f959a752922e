// The compiler's count of what each kernel launch computes and moves, kept
// in the artifact (the KernelCosts section) so that the runtime, which never
// sees the IR, can put its measured kernel times on a roofline
// (quill-run --profile --report).
//
// Section layout (little-endian): u32 count, then per entry u8 step, u8 row
// scaling, u8 int8 products, u8 reserved, f64 flops, f64 flops per
// position, f64 weight bytes, f64 row bytes, f64 KV bytes per position, then
// the kernel's symbol, its quill ops and its weight encoding as strings
// (u32 length, bytes).
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace quill {

/// The schedule a kernel row belongs to.
enum class CostStep : uint8_t { Step = 0, Prefill = 1, Batch = 2 };
constexpr uint8_t kCostStepCount = 3;

/// "step", "prefill", "batch".
const char *costStepName(CostStep step);

/// How a launch's row work follows the rows a batch step runs: the
/// compiled figures are for every row.
enum class RowScaling : uint8_t {
  None = 0,      ///< Fixed work (the single-sequence steps).
  LiveRows = 1,  ///< Only the live rows run.
  LogitRows = 2, ///< Only the rows that want logits run.
};

/// One launch of a kernel in one schedule, as the compiler counts it
/// (compiler/Inspect/DispatchCost.h).
struct KernelCost {
  CostStep step = CostStep::Step;
  RowScaling scaling = RowScaling::None;
  bool int8Products = false;   ///< Its products run as int8 dot products.
  double flops = 0;            ///< Fixed FLOPs (2 per multiply-add).
  double flopsPerPosition = 0; ///< More per cached position read (attention).
  double weightBytes = 0;      ///< Weight bytes read: the same whatever the rows.
  double rowBytes = 0;         ///< Activations read and written, KV rows written.
  double kvBytesPerPosition = 0;
  std::string kernel;     ///< Its exported symbol.
  std::string op;         ///< Its quill ops ("linear+rmsnorm+swiglu").
  std::string weightType; ///< "q4_k", "f32", or empty.
};

/// What one launch did, for the profile.
struct LaunchWork {
  double flops = 0;
  double bytes = 0;
};

/// The work of a launch of `cost` whose rows attended `flopPositions`
/// cached positions each (a mean over rows where they differ) and which
/// read `bytePositions` positions of the cache per row it streams for (a
/// prefill chunk's rows share theirs: the last row's), where a batch step
/// ran `liveRows` and `logitRows` of its `rows`.
LaunchWork launchWork(const KernelCost &cost, double flopPositions, double bytePositions,
                      int32_t liveRows = 0, int32_t logitRows = 0, int32_t rows = 0);

constexpr uint32_t kMaxKernelCosts = 1u << 16;
/// The most any figure of a launch may be: far past any real kernel, and
/// low enough that sums and ratios over a run stay finite.
constexpr double kMaxKernelCostFigure = 1e18;

std::vector<uint8_t> encodeKernelCosts(const std::vector<KernelCost> &costs);
ErrorOr<std::vector<KernelCost>> decodeKernelCosts(const uint8_t *data, size_t size);

/// The cost of `kernel` in `step`, or null.
const KernelCost *findKernelCost(const std::vector<KernelCost> &costs, CostStep step,
                                 const std::string &kernel);

} // namespace quill
