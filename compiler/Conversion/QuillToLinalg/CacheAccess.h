// How kernels read and write a KV cache of any element type (--kv-type):
// float caches (f32, f16, bf16) hold elements, rounded on write and widened
// where attention reads them; a Q8_0 cache arrives in a kernel as its bytes
// (quill.weight_view), each row in GGUF blocks of 32 (an fp16 scale, 32
// int8) that never straddle two heads. Writes quantize each block at once;
// reads see a head as its row of bytes and decode in registers.
#pragma once

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::quill {

/// Whether `cache` (a cache, a block pool, or a view of either) holds Q8_0
/// blocks.
bool isQuantizedCache(Value cache);

/// What holds the cache's data inside a kernel: its bytes for a Q8_0
/// cache, else the cache itself.
Value cacheStorage(Value cache);

/// The storage `storage` seen again as a cache of `cacheType` (a
/// quill.weight_view where `cacheType` is Q8_0).
Value asCache(OpBuilder &b, Location loc, Type cacheType, Value storage);

/// The cache's storage with its rows split into kv heads: [..., kv heads,
/// head width], head width being head_dim elements, or for a Q8_0 cache
/// head_dim / 32 blocks of 34 bytes (an i8 view: what the attention
/// kernels read as a "head row").
Value headsView(OpBuilder &b, Location loc, Value cache, int64_t kvHeads, int64_t headDim);

/// The last dimension a head takes in a headsView.
int64_t headWidth(Value cache, int64_t headDim);

/// Writes the f32 `rows` ([n, width] or one row [width]) into the cache `storage` of element type
/// `element` (as cacheStorage), from element `offsets` (one per storage dimension; the rows go
/// along the second-to-last, the elements along the last; the last offset a whole number of blocks
/// for Q8_0). Float caches round to their element; a Q8_0 cache quantizes each block of 32 as
/// llama.cpp's quantize_row_q8_0 does on this CPU (d = amax / 127 stored as fp16, q = roundeven(x /
/// d)). Returns the updated storage.
Value storeCacheRows(OpBuilder &b, Location loc, Value rows, Type element, Value storage,
                     ArrayRef<OpFoldResult> offsets);

/// Element d of the head row at `leading` (all but the last index, e.g.
/// position and kv head) of `view` (a headsView or a slice of one), as
/// f32: the element widened, or decoded from its Q8_0 block.
Value readHeadElement(OpBuilder &b, Location loc, Value view, ValueRange leading, Value d);

/// Element `column` of row `position` of the [context, kv width] `cache`
/// as f32 (the scalar reads of the CUDA lane kernels).
Value readCacheElement(OpBuilder &b, Location loc, Value cache, Value position, Value column);

} // namespace mlir::quill
