// Encoding and checking the artifact's kernel costs, and a launch's work.
#include "runtime/artifact/KernelCosts.h"

#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/support/ByteStream.h"

#include <cmath>
#include <set>
#include <utility>

namespace quill {

const char *costStepName(CostStep step) {
  switch (step) {
  case CostStep::Step:
    return "step";
  case CostStep::Prefill:
    return "prefill";
  case CostStep::Batch:
    return "batch";
  }
  return "step";
}

LaunchWork launchWork(const KernelCost &cost, double flopPositions, double bytePositions,
                      int32_t liveRows, int32_t logitRows, int32_t rows) {
  double share = 1;
  if (rows > 0 && cost.scaling == RowScaling::LiveRows)
    share = double(liveRows) / rows;
  else if (rows > 0 && cost.scaling == RowScaling::LogitRows)
    share = double(logitRows) / rows;
  LaunchWork work;
  work.flops = share * (cost.flops + cost.flopsPerPosition * flopPositions);
  work.bytes = cost.weightBytes + share * (cost.rowBytes + cost.kvBytesPerPosition * bytePositions);
  return work;
}

std::vector<uint8_t> encodeKernelCosts(const std::vector<KernelCost> &costs) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(costs.size()));
  for (const KernelCost &c : costs) {
    w.put<uint8_t>(static_cast<uint8_t>(c.step));
    w.put<uint8_t>(static_cast<uint8_t>(c.scaling));
    w.put<uint8_t>(c.int8Products ? 1 : 0);
    w.put<uint8_t>(0);
    for (double figure :
         {c.flops, c.flopsPerPosition, c.weightBytes, c.rowBytes, c.kvBytesPerPosition})
      w.put<double>(figure);
    w.putString(c.kernel);
    w.putString(c.op);
    w.putString(c.weightType);
  }
  return std::move(w.bytes());
}

ErrorOr<std::vector<KernelCost>> decodeKernelCosts(const uint8_t *data, size_t size) {
  auto fail = [](const std::string &what) { return Status::error("kernel costs: " + what); };
  ByteReader r(data, size);
  const uint32_t count = r.get<uint32_t>();
  // An entry takes at least 56 bytes: a larger count is corrupt before
  // anything is allocated for it.
  if (!r.ok() || count > kMaxKernelCosts || count > r.remaining() / 56)
    return fail("corrupt entry count");
  std::vector<KernelCost> costs(count);
  // One entry per (step, kernel): a second would never be read (the first
  // answers every lookup), so a section holding one is not the compiler's.
  std::set<std::pair<uint8_t, std::string>> seen;
  for (uint32_t i = 0; i < count; ++i) {
    KernelCost &c = costs[i];
    const uint8_t step = r.get<uint8_t>(), scaling = r.get<uint8_t>(), int8 = r.get<uint8_t>();
    r.get<uint8_t>();
    double *figures[] = {&c.flops, &c.flopsPerPosition, &c.weightBytes, &c.rowBytes,
                         &c.kvBytesPerPosition};
    for (double *figure : figures)
      *figure = r.get<double>();
    c.kernel = r.getString(1024);
    c.op = r.getString(1024);
    c.weightType = r.getString(64);
    const std::string which = "entry " + std::to_string(i);
    if (!r.ok())
      return fail(which + " is truncated or corrupt");
    if (step >= kCostStepCount || scaling > 2 || int8 > 1)
      return fail(which + " has an unknown step, row scaling or product kind");
    if (!isSymbolName(c.kernel))
      return fail(which + " does not name a kernel");
    for (double *figure : figures)
      if (!std::isfinite(*figure) || *figure < 0 || *figure > kMaxKernelCostFigure)
        return fail("'" + c.kernel + "' has a negative, non-finite or impossibly large figure");
    if (!seen.insert({step, c.kernel}).second)
      return fail("'" + c.kernel + "' has two entries for one step");
    c.step = static_cast<CostStep>(step);
    c.scaling = static_cast<RowScaling>(scaling);
    c.int8Products = int8 == 1;
  }
  if (!r.atEnd())
    return fail("trailing bytes");
  return costs;
}

const KernelCost *findKernelCost(const std::vector<KernelCost> &costs, CostStep step,
                                 const std::string &kernel) {
  for (const KernelCost &c : costs)
    if (c.step == step && c.kernel == kernel)
      return &c;
  return nullptr;
}

} // namespace quill
