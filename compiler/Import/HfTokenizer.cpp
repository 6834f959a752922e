// tokenizer.json -> TokenizerData.
//
// A SentencePiece-derived BPE (Llama 2) becomes llama2.c's scored form. Its
// merges were generated from the SentencePiece scores: every split of every
// piece into two pieces is a merge, ordered by the merged piece's score. So
// "merge the lowest-ranked pair" (Hugging Face) and "merge the pair whose
// concatenation scores highest" (llama2.c, SentencePiece) choose the same
// pair when each piece's score is minus the rank of the first merge that
// makes it. Pieces no merge makes get -1e10, the score llama2.c never
// merges to, which is also what Hugging Face does with them.
#include "compiler/Import/HfTokenizer.h"

#include "compiler/Import/JsonValue.h"
#include "compiler/Import/TokenizerImport.h"
#include "runtime/tokenizer/ByteLevelBpe.h"

#include <algorithm>
#include <unordered_map>

namespace quill {

namespace {

/// llama2.c's never-merge score (see runtime/tokenizer/Tokenizer.cpp).
constexpr float kNoMergeScore = -1e10f;

const std::string kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::string kMetaspace = "\xE2\x96\x81"; // U+2581

std::string typeOf(const JsonValue *v) {
  const JsonValue *type = v ? v->find("type") : nullptr;
  return type && type->asString() ? *type->asString() : "";
}

bool isBytePiece(const std::string &piece) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && hex(piece[3]) && hex(piece[4]) &&
         piece[5] == '>';
}

/// Reads tokenizer.json parts into TokenizerData, failing with the path.
class Converter {
public:
  Converter(const JsonValue &json, const std::string &path) : json_(json), path_(path) {}

  ErrorOr<TokenizerData> convert(int32_t bosId, int32_t eosId);

private:
  Status fail(const std::string &what) const { return Status::error(path_ + ": " + what); }
  Status readVocabulary();
  Status readMerges(std::vector<std::pair<int32_t, int32_t>> &merges);
  Status addPreTokenizer(const JsonValue &p, int depth);
  Status checkSentencePieceNormalizer(const JsonValue *normalizer);

  const JsonValue &json_;
  const std::string &path_;
  const JsonValue *model_ = nullptr;
  TokenizerData data_;
  /// Tokens as tokenizer.json writes them -> id.
  std::unordered_map<std::string, int32_t> idOfText_;
  std::vector<std::string> textOfId_;
  std::vector<bool> assigned_; ///< Ids the file names (others are holes).
  bool sawByteLevel_ = false;
};

Status Converter::readVocabulary() {
  const JsonValue *vocab = model_->find("vocab");
  if (!vocab || !vocab->asObject())
    return fail("model.vocab is not an object");
  int64_t count = 0;
  auto note = [&](const std::string &text, const JsonValue &idValue, const char *where) -> Status {
    std::optional<int64_t> id = idValue.asInteger();
    if (!id || *id < 0 || *id >= kMaxImportedVocab)
      return fail(std::string(where) + " gives '" + text +
                  "' an id that is not an integer in [0, " + std::to_string(kMaxImportedVocab) +
                  ")");
    count = std::max(count, *id + 1);
    if (size_t(*id) >= textOfId_.size())
      textOfId_.resize(size_t(*id) + 1);
    if (size_t(*id) >= assigned_.size())
      assigned_.resize(size_t(*id) + 1, false);
    // added_tokens repeat vocabulary entries; one id for two texts is a
    // broken file (the other text's id is then missing).
    if (assigned_[*id] && textOfId_[*id] != text)
      return fail(std::string(where) + " gives id " + std::to_string(*id) + " to '" + text +
                  "', which '" + textOfId_[*id] + "' already has");
    textOfId_[*id] = text;
    assigned_[*id] = true;
    idOfText_.emplace(text, int32_t(*id));
    return Status::ok();
  };
  for (const auto &[text, id] : *vocab->asObject())
    if (Status s = note(text, id, "model.vocab"); !s)
      return s;
  std::vector<std::pair<int32_t, bool>> added; // id, special
  if (const JsonValue *list = json_.find("added_tokens"); list && list->asArray()) {
    for (const JsonValue &token : *list->asArray()) {
      const JsonValue *id = token.find("id");
      const JsonValue *content = token.find("content");
      if (!id || !content || !content->asString())
        return fail("an added_tokens entry lacks \"id\" or \"content\"");
      if (Status s = note(*content->asString(), *id, "added_tokens"); !s)
        return s;
      const JsonValue *special = token.find("special");
      added.emplace_back(int32_t(*id->asInteger()),
                         special && special->asBool() && *special->asBool());
    }
  }
  if (count == 0)
    return fail("the vocabulary is empty");
  data_.pieces.assign(size_t(count), "");
  data_.scores.assign(size_t(count), 0.0f);
  data_.types.assign(size_t(count), TokenType::Unused);
  for (int64_t id = 0; id < count; ++id)
    if (assigned_[id])
      data_.types[id] = TokenType::Normal;
  for (auto [id, special] : added)
    data_.types[id] = special ? TokenType::Control : TokenType::UserDefined;
  return Status::ok();
}

Status Converter::readMerges(std::vector<std::pair<int32_t, int32_t>> &out) {
  const JsonValue *merges = model_->find("merges");
  if (!merges || !merges->asArray())
    return fail("model.merges is not an array");
  out.reserve(merges->asArray()->size());
  for (const JsonValue &merge : *merges->asArray()) {
    std::string left, right;
    if (const std::string *s = merge.asString()) {
      size_t space = s->find(' ');
      if (space == std::string::npos)
        return fail("merge '" + *s + "' is not \"left right\"");
      left = s->substr(0, space);
      right = s->substr(space + 1);
    } else if (merge.asArray() && merge.asArray()->size() == 2 &&
               (*merge.asArray())[0].asString() && (*merge.asArray())[1].asString()) {
      left = *(*merge.asArray())[0].asString();
      right = *(*merge.asArray())[1].asString();
    } else {
      return fail("merge " + std::to_string(out.size()) +
                  " is neither \"left right\" nor [left, right]");
    }
    auto l = idOfText_.find(left), r = idOfText_.find(right);
    if (l == idOfText_.end() || r == idOfText_.end())
      return fail("merge " + std::to_string(out.size()) + " '" + left + " " + right +
                  "' names a token not in the vocabulary");
    out.emplace_back(l->second, r->second);
  }
  return Status::ok();
}

Status Converter::addPreTokenizer(const JsonValue &p, int depth) {
  const std::string type = typeOf(&p);
  if (type == "Sequence" && depth < 4) {
    const JsonValue *list = p.find("pretokenizers");
    if (!list || !list->asArray())
      return fail("pre_tokenizer Sequence without \"pretokenizers\"");
    for (const JsonValue &inner : *list->asArray())
      if (Status s = addPreTokenizer(inner, depth + 1); !s)
        return s;
    return Status::ok();
  }
  if (type == "ByteLevel") {
    sawByteLevel_ = true;
    const JsonValue *prefix = p.find("add_prefix_space");
    if (prefix && prefix->asBool() && *prefix->asBool())
      data_.flags |= kAddPrefixSpace;
    const JsonValue *regex = p.find("use_regex");
    if (!regex || !regex->asBool() || *regex->asBool())
      data_.preTokenizer.push_back(PreTokenizeStep::Gpt2);
    return Status::ok();
  }
  if (type == "Digits") {
    const JsonValue *individual = p.find("individual_digits");
    if (!individual || !individual->asBool() || !*individual->asBool())
      return fail("pre_tokenizer Digits without individual_digits is not "
                  "supported");
    data_.preTokenizer.push_back(PreTokenizeStep::SplitDigits);
    return Status::ok();
  }
  if (type == "Split") {
    const JsonValue *pattern = p.find("pattern");
    const JsonValue *regex = pattern ? pattern->find("Regex") : nullptr;
    const JsonValue *behavior = p.find("behavior");
    const JsonValue *invert = p.find("invert");
    if (!regex || !regex->asString())
      return fail("pre_tokenizer Split without a \"Regex\" pattern");
    if (!behavior || !behavior->asString() || *behavior->asString() != "Isolated" ||
        (invert && invert->asBool() && *invert->asBool()))
      return fail("pre_tokenizer Split must be Isolated and not inverted");
    const std::string &r = *regex->asString();
    if (r == kLlama3Regex)
      data_.preTokenizer.push_back(PreTokenizeStep::Llama3);
    else if (r == kQwen2Regex)
      data_.preTokenizer.push_back(PreTokenizeStep::Llama3SingleDigits);
    else if (r == kGpt2Regex)
      data_.preTokenizer.push_back(PreTokenizeStep::Gpt2);
    else
      return fail("pre_tokenizer Split regex is not one Quill implements "
                  "(GPT-2's, Llama 3's or Qwen 2's): " +
                  r.substr(0, 80));
    return Status::ok();
  }
  return fail("pre_tokenizer '" + (type.empty() ? "?" : type) +
              "' is not supported for byte-level BPE");
}

Status Converter::checkSentencePieceNormalizer(const JsonValue *normalizer) {
  if (!normalizer || normalizer->isNull())
    return Status::ok();
  std::vector<const JsonValue *> parts;
  if (typeOf(normalizer) == "Sequence") {
    const JsonValue *list = normalizer->find("normalizers");
    if (!list || !list->asArray())
      return fail("normalizer Sequence without \"normalizers\"");
    for (const JsonValue &n : *list->asArray())
      parts.push_back(&n);
  } else {
    parts.push_back(normalizer);
  }
  for (const JsonValue *n : parts) {
    std::string type = typeOf(n);
    const JsonValue *prepend = n->find("prepend");
    const JsonValue *pattern = n->find("pattern");
    const JsonValue *from = pattern ? pattern->find("String") : nullptr;
    const JsonValue *content = n->find("content");
    if (type == "Prepend" && prepend && prepend->asString() && *prepend->asString() == kMetaspace) {
      data_.flags |= kAddDummyPrefix;
    } else if (type == "Replace" && from && from->asString() && *from->asString() == " " &&
               content && content->asString() && *content->asString() == kMetaspace) {
      // Spaces as U+2581: Quill's pieces spell U+2581 as ' ' anyway.
    } else {
      return fail("normalizer '" + type + "' is not supported for a SentencePiece-style BPE");
    }
  }
  return Status::ok();
}

ErrorOr<TokenizerData> Converter::convert(int32_t bosId, int32_t eosId) {
  model_ = json_.find("model");
  if (!model_ || !model_->isObject())
    return fail("no \"model\" object: not a tokenizer.json");
  std::string modelType = typeOf(model_);
  if (modelType != "BPE")
    return fail("tokenizer model type '" + (modelType.empty() ? "?" : modelType) +
                "' is not supported (Quill reads BPE)");
  if (Status s = readVocabulary(); !s)
    return s;
  std::vector<std::pair<int32_t, int32_t>> merges;
  if (Status s = readMerges(merges); !s)
    return s;

  const JsonValue *normalizer = json_.find("normalizer");
  const JsonValue *preTokenizer = json_.find("pre_tokenizer");
  if (preTokenizer && !preTokenizer->isNull() && typeOf(preTokenizer) != "Metaspace")
    if (Status s = addPreTokenizer(*preTokenizer, 0); !s)
      return s;
  const JsonValue *byteFallback = model_->find("byte_fallback");
  const bool hasByteFallback = byteFallback && byteFallback->asBool() && *byteFallback->asBool();
  const size_t count = data_.pieces.size();
  for (int32_t *id : {&bosId, &eosId})
    if (*id >= int32_t(count))
      *id = -1;
  data_.bosId = bosId;
  data_.eosId = eosId;
  if (const JsonValue *unk = model_->find("unk_token"); unk && unk->asString()) {
    auto it = idOfText_.find(*unk->asString());
    data_.unkId = it != idOfText_.end() ? it->second : -1;
  }

  if (sawByteLevel_) {
    data_.kind = TokenizerKind::ByteLevelBpe;
    if (normalizer && !normalizer->isNull())
      return fail("normalizer '" + typeOf(normalizer) + "' is not supported for byte-level BPE");
    if (const JsonValue *ignore = model_->find("ignore_merges");
        ignore && ignore->asBool() && *ignore->asBool())
      data_.flags |= kIgnoreMerges;
    for (size_t id = 0; id < count; ++id) {
      const std::string &text = textOfId_[id];
      std::optional<std::string> bytes;
      if (data_.types[id] == TokenType::Normal)
        bytes = gpt2PieceToBytes(text);
      data_.pieces[id] = bytes ? *bytes : text;
    }
    data_.merges = std::move(merges);
    return std::move(data_);
  }

  if (!hasByteFallback)
    return fail("a BPE model that is neither byte-level (a ByteLevel "
                "pre_tokenizer) nor SentencePiece-style (byte_fallback) is "
                "not supported");
  data_.kind = TokenizerKind::SentencePieceBpe;
  if (Status s = checkSentencePieceNormalizer(normalizer); !s)
    return s;
  if (typeOf(preTokenizer) == "Metaspace") {
    // The newer spelling of the dummy prefix.
    const JsonValue *scheme = preTokenizer->find("prepend_scheme");
    const JsonValue *prefix = preTokenizer->find("add_prefix_space");
    if ((scheme && scheme->asString() && *scheme->asString() != "never") ||
        (prefix && prefix->asBool() && *prefix->asBool()))
      data_.flags |= kAddDummyPrefix;
  }
  for (size_t id = 0; id < count; ++id) {
    data_.pieces[id] = metaspaceToSpace(textOfId_[id]);
    if (data_.types[id] == TokenType::Normal) {
      if (isBytePiece(textOfId_[id]))
        data_.types[id] = TokenType::Byte;
      else
        data_.scores[id] = kNoMergeScore;
    }
  }
  if (data_.unkId >= 0)
    data_.types[data_.unkId] = TokenType::Unknown;
  std::vector<bool> scored(count, false);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    auto [left, right] = merges[rank];
    auto it = idOfText_.find(textOfId_[left] + textOfId_[right]);
    if (it == idOfText_.end())
      return fail("merge " + std::to_string(rank) + " makes a piece that is not in the vocabulary");
    if (!scored[it->second]) {
      scored[it->second] = true;
      data_.scores[it->second] = -float(rank);
    }
  }
  return std::move(data_);
}

} // namespace

ErrorOr<TokenizerData> tokenizerFromHfJson(const JsonValue &json, const std::string &path,
                                           int32_t bosId, int32_t eosId) {
  return Converter(json, path).convert(bosId, eosId);
}

} // namespace quill
