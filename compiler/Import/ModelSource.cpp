// The format-neutral model interface: canonical shapes, checking a format's
// tensors against them, fp32 conversion, and --info.
#include "compiler/Import/ModelSource.h"

#include "compiler/Import/ChatTemplateImport.h"

#include "compiler/Import/Diagnostics.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/Quantize.h"
#include "compiler/Import/TokenizerImport.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace quill {

int64_t ImportedTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

ModelSource::~ModelSource() = default;

std::string ModelSource::name() const {
  std::filesystem::path p(path_);
  if (!p.has_filename()) // A directory given with a trailing slash.
    p = p.parent_path();
  std::string stem = p.stem().string();
  return stem.empty() || stem == "." ? "model" : stem;
}

const ImportedTensor *ModelSource::find(const std::string &name) const {
  auto it = indexByName_.find(name);
  return it == indexByName_.end() ? nullptr : &tensors_[it->second];
}

std::vector<int64_t> canonicalShape(const ModelConfig &c, const std::string &name) {
  const int64_t dim = c.dim, hidden = c.hiddenDim, qDim = c.qDim(), kvDim = c.kvDim(),
                vocab = c.vocabSize, headDim = c.headDim();
  if (name == "tok_embeddings" || name == "output")
    return {vocab, dim};
  if (name == "norm")
    return {dim};
  if (name == "rope_freqs")
    return {headDim / 2};
  const std::string prefix = "layers.";
  if (name.compare(0, prefix.size(), prefix) != 0)
    return {};
  size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos)
    return {};
  std::string kind = name.substr(dot + 1);
  if (kind == "attention_norm" || kind == "ffn_norm")
    return {dim};
  if (kind == "wq")
    return {qDim, dim};
  if (kind == "wo")
    return {dim, qDim};
  if (kind == "wk" || kind == "wv")
    return {kvDim, dim};
  if (kind == "bq")
    return {qDim};
  if (kind == "bk" || kind == "bv")
    return {kvDim};
  if (kind == "q_norm" || kind == "k_norm")
    return {headDim};
  if (kind == "w1" || kind == "w3")
    return {hidden, dim};
  if (kind == "w2")
    return {dim, hidden};
  return {};
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

Status ModelSource::setTensors(std::unordered_map<std::string, ImportedTensor> byName) {
  tensors_.clear();
  indexByName_.clear();
  if (!config_.ropeFrequencies.empty()) {
    // Computed at import from the RoPE scaling: the config owns the values.
    ImportedTensor freqs;
    freqs.name = "rope_freqs";
    freqs.shape = {int64_t(config_.ropeFrequencies.size())};
    freqs.sourceName = "rope_freqs (computed from the RoPE scaling)";
    freqs.sourceFile = path_;
    freqs.data = reinterpret_cast<const uint8_t *>(config_.ropeFrequencies.data());
    byName["rope_freqs"] = std::move(freqs);
  }
  const std::vector<std::string> canonical = llama2cCanonicalNames(config_);
  // A tensor the config gives no place (a bias in a model without biases)
  // would be silently dropped: refused instead.
  for (const auto &[name, t] : byName)
    if (std::find(canonical.begin(), canonical.end(), name) == canonical.end())
      return Status::error(t.sourceFile + ": unexpected tensor '" + t.sourceName +
                           "': the model's configuration has no place for it");
  for (const std::string &name : canonical) {
    auto it = byName.find(name);
    if (it == byName.end()) {
      std::string source = sourceNameOf(name);
      return Status::error(path_ + ": the model has no tensor '" + source + "'" +
                           (source != name ? " (Quill's " + name + ")" : ""));
    }
    ImportedTensor &t = it->second;
    std::vector<int64_t> expected = canonicalShape(config_, name);
    if (t.shape != expected)
      return Status::error(t.sourceFile + ": tensor '" + t.sourceName + "' has shape " +
                           shapeString(t.shape) + " (rows x columns), expected " +
                           shapeString(expected));
    if (t.rowOrder == RowOrder::RotateHalfToInterleaved &&
        (t.headDim <= 0 || t.headDim % 2 != 0 || t.shape[0] % t.headDim != 0))
      return Status::error(t.sourceFile + ": tensor '" + t.sourceName +
                           "' cannot be split into heads of " + std::to_string(t.headDim) +
                           " rows");
    indexByName_.emplace(name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  return Status::ok();
}

/// The row of the file that holds Quill's row `row` of `t`: for
/// rotate-half Q/K rows, Quill's (head h, pair i, half j) is stored at
/// h*headDim + j*headDim/2 + i.
static int64_t storedRow(const ImportedTensor &t, int64_t row) {
  if (t.rowOrder == RowOrder::AsStored)
    return row;
  const int64_t half = t.headDim / 2, within = row % t.headDim;
  return row / t.headDim * t.headDim + (within % 2) * half + within / 2;
}

/// Rows the row order applies to: a matrix's rows, or a reordered vector's
/// elements (a Q or K bias, a q/k norm weight).
static int64_t rowsOf(const ImportedTensor &t) {
  if (t.shape.size() == 2)
    return t.shape[0];
  return t.rowOrder == RowOrder::AsStored ? 1 : t.numElements();
}

Status ModelSource::readTensor(const ImportedTensor &t, float *out) const {
  const int64_t rows = rowsOf(t);
  const int64_t columns = rows > 0 ? t.numElements() / rows : 0;
  if (t.rowOrder == RowOrder::AsStored) {
    convertToFloat(t.dtype, t.data, t.numElements(), out);
    return Status::ok();
  }
  std::optional<uint64_t> rowBytes = dtypeBytes(t.dtype, uint64_t(columns));
  if (!rowBytes)
    return Status::error(t.sourceFile + ": tensor '" + t.sourceName + "' rows are not whole " +
                         dtypeName(t.dtype) + " blocks");
  for (int64_t row = 0; row < rows; ++row)
    convertToFloat(t.dtype, t.data + uint64_t(storedRow(t, row)) * *rowBytes, columns,
                   out + row * columns);
  return Status::ok();
}

Status ModelSource::readTensorEncoded(const ImportedTensor &t, SourceDType encoding,
                                      uint8_t *out) const {
  const int64_t rows = rowsOf(t);
  const int64_t columns = rows > 0 ? t.numElements() / rows : 0;
  std::optional<uint64_t> storedBytes = dtypeBytes(t.dtype, uint64_t(columns));
  std::optional<uint64_t> encodedRow = dtypeBytes(encoding, uint64_t(columns));
  if (!storedBytes || !encodedRow)
    return Status::error(t.sourceFile + ": tensor '" + t.sourceName + "' rows of " +
                         std::to_string(columns) + " are not whole " + dtypeName(t.dtype) +
                         " and " + dtypeName(encoding) + " blocks");
  std::vector<float> values(t.dtype == encoding ? 0 : size_t(columns));
  for (int64_t row = 0; row < rows; ++row) {
    const uint8_t *stored = t.data + uint64_t(storedRow(t, row)) * *storedBytes;
    uint8_t *encoded = out + uint64_t(row) * *encodedRow;
    if (t.dtype == encoding) {
      std::memcpy(encoded, stored, *storedBytes);
      continue;
    }
    convertToFloat(t.dtype, stored, columns, values.data());
    quantizeRow(encoding, values.data(), columns, encoded);
  }
  return Status::ok();
}

ErrorOr<std::vector<float>> ModelSource::readTensor(const std::string &name) const {
  const ImportedTensor *t = find(name);
  if (!t)
    return Status::error(path_ + ": the model has no tensor '" + name + "'");
  std::vector<float> values(size_t(t->numElements()));
  if (Status s = readTensor(*t, values.data()); !s)
    return s;
  return values;
}

void describeModel(const ModelSource &model, const std::string &tokenizerOverride,
                   std::ostream &out, const std::string &chatTemplateOverride) {
  const ModelConfig &c = model.config();
  out << "model:        " << model.path() << "\n"
      << "format:       " << model.format() << "\n"
      << "architecture: " << model.architecture() << "\n"
      << "dim " << c.dim << ", hidden " << c.hiddenDim << ", layers " << c.nLayers << ", heads "
      << c.nHeads << ", kv heads " << c.nKvHeads << ", head size " << c.headDim() << ", vocab "
      << c.vocabSize << ", context " << c.seqLen << "\n"
      << "rope theta " << c.ropeTheta << ", rms norm eps " << c.normEps << ", bos " << c.bosId
      << ", eos " << c.eosId << ", classifier "
      << (c.sharedClassifier ? "shared with the embedding" : "separate") << "\n";
  auto tokenizer = model.tokenizer();
  out << "tokenizer:    "
      << (tokenizer ? describeTokenizer(*tokenizer) : "none (" + oneLine(tokenizer.message()) + ")")
      << "\n";
  if (!tokenizerOverride.empty()) {
    auto given = loadTokenizerFile(tokenizerOverride, c);
    out << "--tokenizer:  "
        << (given ? describeTokenizer(*given) : "unusable (" + given.message() + ")") << "\n";
  }
  if (auto chatTemplate = artifactChatTemplate(model, chatTemplateOverride))
    describeChatTemplate(*chatTemplate, out);
  else
    out << "chat template: unusable (" << chatTemplate.message() << ")\n";
  for (const std::string &note : model.notes())
    out << "note:         " << note << "\n";

  uint64_t elements = 0;
  size_t nameWidth = 0, sourceWidth = 0;
  for (const ImportedTensor &t : model.tensors()) {
    elements += uint64_t(t.numElements());
    nameWidth = std::max(nameWidth, t.name.size());
    sourceWidth = std::max(sourceWidth, t.sourceName.size());
  }
  out << "tensors:      " << model.tensors().size() << ", " << elements
      << " parameters (canonical name, name in the file, type, shape)\n";
  for (const ImportedTensor &t : model.tensors()) {
    out << "  " << t.name << std::string(nameWidth - t.name.size() + 2, ' ') << t.sourceName
        << std::string(sourceWidth - t.sourceName.size() + 2, ' ') << dtypeName(t.dtype) << "  "
        << shapeString(t.shape);
    if (t.rowOrder == RowOrder::RotateHalfToInterleaved)
      out << "  (rows un-permuted from rotate-half)";
    out << "\n";
  }
  // What the artifact stores (matrices in their encoding, vectors in f32)
  // and what one decode step reads of it: one embedding row, unless the
  // classifier shares the table.
  uint64_t stored = 0, perToken = 0;
  for (const ImportedTensor &t : model.tensors()) {
    uint64_t bytes = t.shape.size() == 2
                         ? dtypeBytes(t.dtype, uint64_t(t.numElements())).value_or(0)
                         : uint64_t(t.numElements()) * sizeof(float);
    stored += bytes;
    bool embeddingRow = t.name == "tok_embeddings" && !c.sharedClassifier;
    perToken += embeddingRow ? bytes / uint64_t(std::max<int64_t>(t.shape.front(), 1)) : bytes;
  }
  out << "weights:      " << stored << " bytes as the artifact stores them (matrices in their "
      << "encoding, vectors in f32); a decode step reads " << perToken << " bytes per token\n";
}

} // namespace quill
