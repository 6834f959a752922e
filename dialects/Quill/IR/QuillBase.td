// The quill dialect: one transformer step at the level a model author thinks in.
#ifndef QUILL_BASE_TD
#define QUILL_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Quill_Dialect : Dialect {
  let name = "quill";
  let cppNamespace = "::mlir::quill";
  let summary = "One autoregressive transformer step: embedding, norms, "
                "linear layers, rotary embedding, attention over a KV cache";
  let description = [{
    The quill dialect expresses one decode step of a Llama-architecture model
    on value-semantic f32 tensors. Weights are referenced by name into the
    artifact's weight table (`quill.weight`), never inlined as constants; the
    KV cache of a layer is a named state (`quill.kv_cache`) that
    `quill.kv_write` updates and `quill.attention` reads.

    After `quill-outline-kernels`, the step becomes a `quill.schedule`: an
    ordered list of `quill.dispatch` ops that launch kernel functions over
    buffer bindings, which the runtime executes.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  // Markers passes leave on functions and ops for later passes, declared
  // here so that they are named once (QuillDialect::get*AttrHelper()).
  let discardableAttrs = (ins
    // On a kernel func.func made by quill-outline-kernels.
    "::mlir::UnitAttr":$kernel,
    // On a kernel whose unit of work a warp runs: its lane count (32).
    "::mlir::IntegerAttr":$warp_lanes,
    // On a compute op before outlining: how a target splits its work into
    // units instead of the default ("rows": a unit per leading row or
    // element; "query-rows": attention's (query row, kv head) pairs).
    "::mlir::StringAttr":$units
  );
}

class Quill_Op<string mnemonic, list<Trait> traits = []>
    : Op<Quill_Dialect, mnemonic, traits>;

class Quill_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Quill_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class Quill_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Quill_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Quill_Tensor : RankedTensorOf<[F32]>;
def Quill_Vector : 1DTensorOf<[F32]>;
def Quill_Matrix : 2DTensorOf<[F32]>;
// Activations: one vector (a decode step) or one row per token ([T, width],
// a prefill chunk of T tokens).
def Quill_Rows : TensorRankOf<[F32], [1, 2]>;
// Per-row integers of a batch step: token ids, positions.
def Quill_RowInts : 1DTensorOf<[I32]>;
// Block tables of a batch step: [rows, blocks per sequence].
def Quill_BlockTables : 2DTensorOf<[I32]>;

#endif // QUILL_BASE_TD
