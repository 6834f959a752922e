// quill-run --profile --report DIR: the kernels as they ran, on a roofline
// under the machine's probed ceilings, so a user sees which kernel is held
// by memory, which by compute, and how far each is from its ceiling.
#pragma once

#include "runtime/bench/ReportHtml.h"
#include "runtime/device/Device.h"
#include "runtime/device/KernelProfile.h"
#include "runtime/support/Error.h"

#include <tbb/task_arena.h>

#include <string>
#include <vector>

namespace quill {

/// The ceilings of the machine `device` runs on: on the CPU, the read
/// bandwidth, FMA and int8 dot-product peaks probed on `arena`'s threads; on
/// a GPU, the bandwidth of its own memory (no FLOP peak is probed there).
RooflineCeilings probeCeilings(Device &device, tbb::task_arena &arena);

/// One kernel of the profile under the ceilings.
struct MeasuredKernel {
  KernelProfile::Entry entry;
  double gflops = 0;    ///< Its FLOPs over its time.
  double gbs = 0;       ///< Its bytes over its time.
  double intensity = 0; ///< FLOPs per byte (0 without a cost).
  double bound = 0;     ///< The most GFLOP/s the ceilings allow there.
  double ofBound = 0;   ///< gflops / bound, or of the bandwidth for kernels without FLOPs.
  std::string limit;    ///< rooflineLimit's, or "?" without a cost.
};
MeasuredKernel measureKernel(const KernelProfile::Entry &entry, const RooflineCeilings &ceilings);

/// What the page says about the run besides the kernels.
struct ProfileRun {
  std::string model;       ///< The artifact's model.
  std::string commandLine; ///< How quill-run was called.
  std::string device;      ///< Device::describe().
  RooflineCeilings ceilings;
};

/// The page (index.html).
std::string renderProfileReport(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels);
/// The measured kernels on the roofline, labelled by their row (roofline.svg).
std::string profileRooflineSvg(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels);
/// The table and its ceilings as JSON (kernels.json).
std::string profileJson(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels);

/// Writes index.html, kernels.json and roofline.svg into `dir` (created).
Status writeProfileReport(const std::string &dir, const ProfileRun &run,
                          const KernelProfile &profile);

} // namespace quill
