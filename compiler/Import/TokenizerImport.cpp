// The artifact's tokenizer: --tokenizer files of every kind, the model's own
// tokenizer, padding to the vocabulary, and a final check by the runtime.
#include "compiler/Import/TokenizerImport.h"

#include "compiler/Import/Diagnostics.h"
#include "compiler/Import/GgufFile.h"
#include "compiler/Import/GgufTokenizer.h"
#include "compiler/Import/HfTokenizer.h"
#include "compiler/Import/JsonValue.h"
#include "compiler/Import/ModelSource.h"
#include "runtime/support/MappedFile.h"
#include "runtime/support/ReadFile.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <cstring>

namespace quill {

namespace {

/// A --tokenizer file: a GGUF file's tokenizer is read from its mapping (the
/// file holds a whole model); any other kind is read whole, up to a cap.
struct TokenizerFile {
  bool gguf = false;
  std::vector<uint8_t> bytes; ///< Empty for a GGUF file.
};

ErrorOr<TokenizerFile> readTokenizerFile(const std::string &path) {
  MappedFileWording wording;
  wording.cannotOpen = "cannot open tokenizer";
  wording.notRegular = "the tokenizer is not a regular file";
  auto file = MappedFile::open(path, wording);
  if (!file)
    return file.status();
  TokenizerFile out;
  out.gguf = file->size() >= 4 && std::memcmp(file->data(), "GGUF", 4) == 0;
  if (out.gguf)
    return out;
  if (file->size() > kMaxTokenizerFileBytes)
    return Status::error(path + ": the tokenizer is " + std::to_string(file->size()) +
                         " bytes, more than the limit of " +
                         std::to_string(kMaxTokenizerFileBytes));
  out.bytes.assign(file->data(), file->data() + file->size());
  return out;
}

bool isJsonSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// A tokenizer.json is an object: '{' ... '}' inside optional white space.
/// A tokenizer.bin starts with its int32 max_token_length, whose high bytes
/// are zero for any real length, so it never passes the NUL check.
bool looksLikeJson(const std::vector<uint8_t> &bytes) {
  size_t begin = 0, end = bytes.size();
  while (begin < end && isJsonSpace(bytes[begin]))
    ++begin;
  while (end > begin && isJsonSpace(bytes[end - 1]))
    --end;
  if (end - begin < 2 || bytes[begin] != '{' || bytes[end - 1] != '}')
    return false;
  return std::find(bytes.begin(), bytes.begin() + std::min<size_t>(4, end), 0) ==
         bytes.begin() + std::min<size_t>(4, end);
}

/// Builds the runtime tokenizer from serialized bytes, as quill-run will.
Status checkWithRuntime(const std::vector<uint8_t> &bytes, int32_t vocabSize,
                        const std::string &sourceName) {
  auto tokenizer = Tokenizer::fromBytes(bytes.data(), bytes.size(), vocabSize, sourceName);
  return tokenizer ? Status::ok() : tokenizer.status();
}

} // namespace

std::string metaspaceToSpace(std::string_view piece) {
  static const std::string_view metaspace = "\xE2\x96\x81"; // U+2581
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, metaspace.size(), metaspace) == 0) {
      out += ' ';
      i += metaspace.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

std::string describeTokenizer(const TokenizerData &data) {
  std::string s;
  if (data.kind == TokenizerKind::SentencePieceBpe) {
    s = "SentencePiece-style BPE (scores, byte fallback)";
  } else {
    s = "byte-level BPE, " + std::to_string(data.merges.size()) + " merges, pre-tokenizer ";
    for (size_t i = 0; i < data.preTokenizer.size(); ++i)
      s += (i ? "+" : "") + std::string(preTokenizeStepName(data.preTokenizer[i]));
    if (data.preTokenizer.empty())
      s += "none";
  }
  s += ", " + std::to_string(data.pieces.size()) + " tokens, bos " + std::to_string(data.bosId) +
       ", eos " + std::to_string(data.eosId);
  if (data.kind == TokenizerKind::SentencePieceBpe)
    s += fitsLlama2cLayout(data) ? " (stored as a llama2.c tokenizer.bin)"
                                 : " (stored in Quill's tokenizer format)";
  return s;
}

Status fitTokenizerToVocab(TokenizerData &data, int32_t vocabSize, const std::string &sourceName) {
  if (data.pieces.size() > size_t(vocabSize))
    return Status::error(sourceName + ": the tokenizer has " + std::to_string(data.pieces.size()) +
                         " tokens, more than the model's vocabulary of " +
                         std::to_string(vocabSize));
  data.pieces.resize(size_t(vocabSize));
  data.scores.resize(size_t(vocabSize), 0.0f);
  data.types.resize(size_t(vocabSize), TokenType::Unused);
  return Status::ok();
}

namespace {

ErrorOr<TokenizerData> loadAnyTokenizer(const std::string &path, const ModelConfig &config) {
  auto bytes = readTokenizerFile(path);
  if (!bytes)
    return bytes.status();
  ErrorOr<TokenizerData> data = Status::error(path + ": unreadable");
  if (bytes->gguf) {
    auto gguf = GgufFile::open(path);
    if (!gguf)
      return gguf.status();
    data = tokenizerFromGguf(*gguf);
  } else if (looksLikeJson(bytes->bytes)) {
    std::string_view text(reinterpret_cast<const char *>(bytes->bytes.data()), bytes->bytes.size());
    auto json = parseJson(text, path);
    if (!json)
      return json.status();
    data = tokenizerFromHfJson(*json, path, config.bosId, config.eosId);
  } else {
    data = parseTokenizer(bytes->bytes.data(), bytes->bytes.size(), config.vocabSize, path);
  }
  if (!data)
    return data;
  if (Status s = fitTokenizerToVocab(*data, config.vocabSize, path); !s)
    return s;
  return data;
}

ErrorOr<std::vector<uint8_t>> tokenizerBytesFor(const ModelSource &model,
                                                const std::string &overridePath) {
  const ModelConfig &config = model.config();
  std::vector<uint8_t> bytes;
  std::string source;
  if (!overridePath.empty()) {
    auto raw = readTokenizerFile(overridePath);
    if (!raw)
      return raw.status();
    source = overridePath;
    if (!raw->gguf && !looksLikeJson(raw->bytes)) {
      // A tokenizer.bin or a Quill tokenizer: embedded as it is.
      bytes = std::move(raw->bytes);
    } else {
      auto data = loadAnyTokenizer(overridePath, config);
      if (!data)
        return data.status();
      bytes = serializeTokenizer(*data);
    }
  } else {
    auto data = model.tokenizer();
    if (!data)
      return data.status();
    source = model.path() + " (tokenizer)";
    if (Status s = fitTokenizerToVocab(*data, config.vocabSize, source); !s)
      return s;
    bytes = serializeTokenizer(*data);
  }
  if (Status s = checkWithRuntime(bytes, config.vocabSize, source); !s)
    return s;
  return bytes;
}

} // namespace

ErrorOr<TokenizerData> loadTokenizerFile(const std::string &path, const ModelConfig &config) {
  auto data = loadAnyTokenizer(path, config);
  if (!data)
    return oneLine(data.status());
  return data;
}

ErrorOr<std::vector<uint8_t>> artifactTokenizerBytes(const ModelSource &model,
                                                     const std::string &overridePath) {
  auto bytes = tokenizerBytesFor(model, overridePath);
  if (!bytes)
    return oneLine(bytes.status());
  return bytes;
}

} // namespace quill
