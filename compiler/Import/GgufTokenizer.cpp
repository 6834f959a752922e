// tokenizer.ggml.* -> TokenizerData.
#include "compiler/Import/GgufTokenizer.h"

#include "compiler/Import/GgufFile.h"
#include "compiler/Import/TokenizerImport.h"
#include "runtime/tokenizer/ByteLevelBpe.h"

#include <unordered_map>

namespace quill {

namespace {

/// tokenizer.ggml.pre values -> Quill's pre-tokenizer steps, following the
/// regexes llama.cpp pairs with each name.
std::optional<std::vector<PreTokenizeStep>> preTokenizerOf(const std::string &pre) {
  using S = PreTokenizeStep;
  if (pre == "default" || pre == "gpt-2" || pre == "gpt2")
    return std::vector<S>{S::Gpt2};
  if (pre == "llama3" || pre == "llama-bpe")
    return std::vector<S>{S::Llama3};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact")
    return std::vector<S>{S::SplitDigits, S::Gpt2};
  if (pre == "qwen2")
    return std::vector<S>{S::Llama3SingleDigits};
  return std::nullopt;
}

/// A byte-level BPE's pre-tokenizer (tokenizer.ggml.pre) and merges (as
/// pairs of the ids of `tokens`) into `data`.
Status readByteLevelRules(const GgufFile &file, const GgufValue &tokens, TokenizerData &data) {
  auto fail = [&](const std::string &what) { return Status::error(file.path() + ": " + what); };
  const size_t count = tokens.elements.size();
  const GgufValue *pre = file.find("tokenizer.ggml.pre");
  std::string preName = pre && pre->asString() ? *pre->asString() : "default";
  auto steps = preTokenizerOf(preName);
  if (!steps)
    return fail("tokenizer.ggml.pre '" + preName +
                "' names a pre-tokenizer Quill does not implement "
                "(it knows default, gpt2, llama-bpe, smollm, qwen2)");
  data.preTokenizer = *steps;

  const GgufValue *merges = file.find("tokenizer.ggml.merges");
  if (!merges || !merges->asArray() || merges->elementType != GgufType::String)
    return fail("tokenizer.ggml.merges is missing or not an array of "
                "strings");
  std::unordered_map<std::string, int32_t> idOfText;
  idOfText.reserve(count);
  for (size_t id = 0; id < count; ++id)
    idOfText.emplace(tokens.elements[id].stringValue, int32_t(id));
  data.merges.reserve(merges->elements.size());
  for (size_t rank = 0; rank < merges->elements.size(); ++rank) {
    const std::string &merge = merges->elements[rank].stringValue;
    size_t space = merge.find(' ');
    auto left = idOfText.find(merge.substr(0, space));
    auto right =
        space == std::string::npos ? idOfText.end() : idOfText.find(merge.substr(space + 1));
    if (left == idOfText.end() || right == idOfText.end())
      return fail("merge " + std::to_string(rank) + " '" + merge +
                  "' is not two tokens of the vocabulary");
    data.merges.emplace_back(left->second, right->second);
  }
  return Status::ok();
}

} // namespace

ErrorOr<TokenizerData> tokenizerFromGguf(const GgufFile &file) {
  auto fail = [&](const std::string &what) { return Status::error(file.path() + ": " + what); };
  const GgufValue *model = file.find("tokenizer.ggml.model");
  if (!model || !model->asString())
    return fail("no tokenizer in the metadata (tokenizer.ggml.model)");
  const std::string &kind = *model->asString();
  if (kind != "llama" && kind != "gpt2")
    return fail("tokenizer.ggml.model '" + kind +
                "' is not supported (Quill reads llama and gpt2)");
  const bool sentencePiece = kind == "llama";

  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens || !tokens->asArray() || tokens->elementType != GgufType::String)
    return fail("tokenizer.ggml.tokens is missing or not an array of "
                "strings");
  const size_t count = tokens->elements.size();
  if (count == 0 || count > size_t(kMaxImportedVocab))
    return fail("tokenizer.ggml.tokens has " + std::to_string(count) + " tokens");

  // Optional parallel arrays must match the token count.
  auto parallel = [&](const char *key) -> ErrorOr<const GgufValue *> {
    const GgufValue *v = file.find(key);
    if (!v)
      return static_cast<const GgufValue *>(nullptr);
    if (!v->asArray() || v->elements.size() != count)
      return fail(std::string(key) + " is not an array of " + std::to_string(count) + " values");
    return v;
  };
  auto scores = parallel("tokenizer.ggml.scores");
  auto types = parallel("tokenizer.ggml.token_type");
  if (!scores)
    return scores.status();
  if (!types)
    return types.status();

  TokenizerData data;
  data.kind = sentencePiece ? TokenizerKind::SentencePieceBpe : TokenizerKind::ByteLevelBpe;
  data.pieces.reserve(count);
  data.scores.assign(count, 0.0f);
  data.types.assign(count, TokenType::Normal);
  for (size_t id = 0; id < count; ++id) {
    if (*types) {
      std::optional<int64_t> t = (*types)->elements[id].asInteger();
      if (!t || *t < 1 || *t > 6)
        return fail("token " + std::to_string(id) + " has an unknown token_type");
      data.types[id] = TokenType(*t);
    }
    if (*scores) {
      std::optional<double> score = (*scores)->elements[id].asNumber();
      if (!score)
        return fail("tokenizer.ggml.scores holds a non-number");
      data.scores[id] = float(*score);
    }
    const std::string &text = tokens->elements[id].stringValue;
    if (sentencePiece) {
      data.pieces.push_back(metaspaceToSpace(text));
    } else if (data.types[id] == TokenType::Control || data.types[id] == TokenType::UserDefined) {
      data.pieces.push_back(text); // Added tokens are stored verbatim.
    } else {
      std::optional<std::string> bytes = gpt2PieceToBytes(text);
      data.pieces.push_back(bytes ? *bytes : text);
    }
  }

  auto special = [&](const char *key, int32_t fallback) -> ErrorOr<int32_t> {
    const GgufValue *v = file.find(key);
    if (!v)
      return fallback;
    std::optional<int64_t> id = v->asInteger();
    if (!id)
      return fail(std::string(key) + " is not an integer");
    // llama.cpp writes -1 as uint32 0xFFFFFFFF for "none".
    if (*id == 0xFFFFFFFF || *id == -1)
      return -1;
    if (*id < 0 || *id >= int64_t(count))
      return fail(std::string(key) + " " + std::to_string(*id) + " is outside the " +
                  std::to_string(count) + " tokens");
    return int32_t(*id);
  };
  auto bos = special("tokenizer.ggml.bos_token_id", sentencePiece ? 1 : -1);
  auto eos = special("tokenizer.ggml.eos_token_id", sentencePiece ? 2 : -1);
  auto unk = special("tokenizer.ggml.unknown_token_id", sentencePiece ? 0 : -1);
  for (auto *id : {&bos, &eos, &unk})
    if (!*id)
      return id->status();
  data.bosId = *bos;
  data.eosId = *eos;
  data.unkId = *unk;

  if (sentencePiece) {
    data.flags = kAddDummyPrefix;
    if (const GgufValue *prefix = file.find("tokenizer.ggml.add_space_prefix"))
      if (prefix->type == GgufType::Bool && prefix->unsignedValue == 0)
        data.flags = 0;
    return data;
  }

  if (Status s = readByteLevelRules(file, *tokens, data); !s)
    return s;
  return data;
}

} // namespace quill
