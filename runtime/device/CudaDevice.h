// The CUDA implementation of Device: the artifact's PTX kernels, launched in
// schedule order on a stream of the device's own, weights and caches in
// device memory. The kernels read the token and position from device memory,
// so a schedule's launches are the same every step: they are captured once
// into a CUDA graph and replayed (one launch per step instead of ~100).
//
// Status: checked against a stand-in driver (tests/mock_cuda: launches
// against the PTX, copies, leaks) but not yet run on a GPU; the GPU tests in
// tests/e2e/CudaTargetTest.cpp (golden text, logits against the CPU) run
// where one is present (scripts/gpu/check.sh).
//
// The CUDA context is made current on whichever thread calls; the device
// keeps a reference to the artifact, which must outlive it.
#pragma once

#include "runtime/artifact/Artifact.h"
#include "runtime/device/CudaDriver.h"
#include "runtime/device/Device.h"
#include "runtime/device/KernelProfile.h"

#include <memory>
#include <string>
#include <vector>

namespace quill {

class CudaDevice final : public Device {
public:
  /// Loads the driver, GPU 0's primary context, the artifact's PTX, and
  /// copies the weights to device memory. Fails in one line when there is
  /// no driver or GPU, or the artifact is not a CUDA one. Without
  /// `cudaGraphs` every kernel is launched every step (for A/B comparisons,
  /// and to name a kernel that fails to launch).
  static ErrorOr<std::unique_ptr<CudaDevice>> create(const Artifact &artifact,
                                                     bool cudaGraphs = true);
  ~CudaDevice() override;

  const char *name() const override { return "cuda"; }
  void step(int32_t token, int32_t pos) override;
  int32_t prefillChunk() const override { return prefillChunk_; }
  void prefill(const int32_t *tokens, int32_t pos) override;
  const float *logits() const override { return logits_.data(); }
  KVCache &kvCache() override { return kvCache_; }
  std::string describe() const override;
  /// Device-to-device copies of a large buffer: bytes read and written per
  /// second, the best of several runs.
  double measureOwnBandwidthGBs() override;
  Status error() const override { return error_; }
  /// Kernels then launch one by one (no graph), each between two events.
  void enableProfiling() override;
  std::string profileReport() const override { return profile_ ? profile_->report() : ""; }
  const KernelProfile *profile() const override { return profile_.get(); }

private:
  /// One dispatch: its function, its parameters' values (binding pointers,
  /// then the step arguments' pointer and the work, filled at launch).
  struct Launch {
    void *function;
    unsigned block; ///< Threads per block: 128, or fewer if the kernel needs.
    std::vector<CudaDriver::DevicePtr> pointers;
    int64_t work;
    int64_t liveRowUnits;    ///< > 0: work capped at this many units per row in use (token).
    const std::string *name; ///< The kernel's, for errors.
    uint64_t bytes;          ///< Its bindings' (for the profile's GB/s).
    const KernelCost *cost;  ///< The compiler's count of its work, or null.
  };
  struct Schedules;

  CudaDevice(const Artifact &artifact, CudaDriver driver, bool cudaGraphs);
  /// Holds the configuration and every dispatch to what the PTX's own
  /// `quill_model_limits` and `quill_contract_K` arrays state (see
  /// runtime/artifact/KernelContract.h), before anything is launched.
  Status checkContracts() const;
  /// The int64 words of the PTX's global `symbol`; fails when it is absent
  /// or holds more than `maxWords`.
  ErrorOr<std::vector<int64_t>> readWords(const std::string &symbol, size_t maxWords) const;
  Status resolve(const Schedule &schedule, CostStep step, std::vector<Launch> &launches,
                 CudaDriver::DevicePtr &logits);
  /// Writes token and pos to the step arguments, runs the launches (the
  /// graph `graph`, captured on first use), then copies the logits back.
  Status run(const std::vector<Launch> &launches, void *&graph, CudaDriver::DevicePtr logits,
             int32_t token, int32_t pos);
  /// Launches in order on the stream.
  Status launchAll(const std::vector<Launch> &launches, int32_t token);
  /// Captures `launches` on the stream into an executable graph.
  Status capture(const std::vector<Launch> &launches, void *&graph);
  /// Records the first error: later steps do nothing (the cache is then in
  /// an unknown state), and error() reports it.
  void fail(const Status &status);
  /// Makes the context current on the calling thread (CUDA's is per thread).
  Status makeCurrent() const;

  const Artifact &artifact_;
  CudaDriver driver_;
  int device_ = 0;
  void *context_ = nullptr;
  void *module_ = nullptr;
  std::string deviceName_;
  int largestLocalBytes_ = 0; ///< Per thread, over the launched kernels.
  CudaDriver::DevicePtr weights_ = 0, kv_ = 0, scratch_ = 0, input_ = 0;
  CudaDriver::DevicePtr stepArgs_ = 0; ///< [token, pos] as int64, read by every kernel.
  int64_t hostStepArgs_[2] = {0, 0};   ///< Their source for the copy.
  void *stream_ = nullptr;
  bool cudaGraphs_;
  void *stepGraph_ = nullptr, *prefillGraph_ = nullptr; ///< Executable graphs, once captured.
  std::unique_ptr<KernelProfile> profile_;              ///< Null unless profiling.
  std::vector<void *> events_;                          ///< Profiling: a start and end per launch.
  std::vector<const Launch *> timed_; ///< Profiling: the launches of this step, in order.
  /// Kernel parameter values and their addresses, reused by every launch.
  std::vector<uint64_t> launchValues_;
  std::vector<void *> launchParams_;
  std::vector<Launch> launches_, prefillLaunches_;
  CudaDriver::DevicePtr stepLogits_ = 0, prefillLogits_ = 0;
  std::vector<float> logits_;
  KVCache kvCache_; ///< Positions only: the cache itself is in kv_.
  int32_t prefillChunk_ = 0;
  Status error_; ///< The first failed step's, sticky.
};

} // namespace quill
