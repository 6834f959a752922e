// Attributes of the quill dialect.
#ifndef QUILL_ATTRS_TD
#define QUILL_ATTRS_TD

include "dialects/Quill/IR/QuillBase.td"

def Quill_BindingAttr : Quill_Attr<"Binding", "binding"> {
  let summary = "A byte range of one runtime memory space bound to a kernel argument";
  let description = [{
    Names where a kernel argument lives at run time: `space` is one of
    `weights` (the artifact's mapped weight blob), `kv` (the KV cache) or
    `scratch` (activations); `offset` and `bytes` delimit the range.

    Example: `#quill.binding<"weights", 4096, 16384>`
  }];
  let parameters = (ins StringRefParameter<"memory space">:$space,
                        "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` $space `,` $offset `,` $bytes `>`";
}

#endif // QUILL_ATTRS_TD
