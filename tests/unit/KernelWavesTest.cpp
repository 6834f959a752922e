// The runtime's dependency scheme: which dispatches may run together.
#include "runtime/device/KernelWaves.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

Binding scratch(uint64_t offset, uint64_t bytes) { return {MemorySpace::Scratch, offset, bytes}; }
Binding weights(uint64_t offset) { return {MemorySpace::Weights, offset, 64}; }
Binding pool(uint64_t section) { return {MemorySpace::KVPool, section, 1024}; }

/// A kernel reading `reads` and writing `out` (its last binding).
Dispatch kernel(std::vector<Binding> reads, Binding out) {
  Dispatch d;
  d.bindings = std::move(reads);
  d.bindings.push_back(out);
  d.writes = uint64_t(1) << (d.bindings.size() - 1);
  return d;
}

TEST(KernelWaves, IndependentProjectionsShareAWaveAndTheirConsumerWaits) {
  // q, k, v from the same normalized input; then attention reads all three.
  Binding x = scratch(0, 256), q = scratch(256, 256), k = scratch(512, 128), v = scratch(640, 128),
          out = scratch(768, 256);
  std::vector<Dispatch> step = {kernel({x, weights(0)}, q), kernel({x, weights(64)}, k),
                                kernel({x, weights(128)}, v), kernel({q, k, v}, out)};
  EXPECT_EQ(planWaves(step), (std::vector<size_t>{0, 3, 4}));
}

TEST(KernelWaves, AChainRunsOneKernelPerWave) {
  Binding a = scratch(0, 64), b = scratch(64, 64), c = scratch(128, 64);
  std::vector<Dispatch> chain = {kernel({a}, b), kernel({b}, c), kernel({c}, a)};
  EXPECT_EQ(planWaves(chain), (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(KernelWaves, WritesConflictWithOverlappingReadsAndWritesOnly) {
  // Partial overlap of byte ranges counts; touching ranges do not.
  EXPECT_TRUE(dispatchesConflict(kernel({scratch(0, 64)}, scratch(64, 64)),
                                 kernel({scratch(100, 8)}, scratch(512, 64))));
  EXPECT_FALSE(dispatchesConflict(kernel({scratch(0, 64)}, scratch(64, 64)),
                                  kernel({scratch(128, 8)}, scratch(512, 64))));
  // Two readers of one range do not conflict.
  EXPECT_FALSE(dispatchesConflict(kernel({weights(0)}, scratch(0, 64)),
                                  kernel({weights(0)}, scratch(64, 64))));
  // Other memory spaces never overlap.
  EXPECT_FALSE(dispatchesConflict(kernel({weights(0)}, scratch(0, 64)),
                                  kernel({{MemorySpace::KVCache, 0, 64}}, scratch(64, 64))));
}

TEST(KernelWaves, PagedCacheSectionsConflictAsWholes) {
  // Writing keys of a layer (section 0) and values (section 1): independent;
  // attention reading both waits for both.
  Dispatch writeKeys;
  writeKeys.bindings = {scratch(0, 64), pool(0)};
  writeKeys.writes = 0b10;
  Dispatch writeValues = writeKeys;
  writeValues.bindings[1] = pool(1);
  Dispatch attention = kernel({scratch(0, 64), pool(0), pool(1)}, scratch(128, 64));
  EXPECT_EQ(planWaves({writeKeys, writeValues, attention}), (std::vector<size_t>{0, 2, 3}));
}

TEST(KernelWaves, WithoutAWriteListEveryBindingCountsAsWritten) {
  Dispatch a, b;
  a.bindings = {weights(0), scratch(0, 64)};
  b.bindings = {weights(0), scratch(64, 64)};
  EXPECT_TRUE(dispatchesConflict(a, b)) << "both might write the weights they share";
  EXPECT_EQ(planWaves({}), (std::vector<size_t>{0}));
}

} // namespace
} // namespace quill
