// Wraps Llama2cCheckpoint as a ModelSource: the mapping stays in the
// checkpoint, the tensors point into it.
#include "compiler/Import/Llama2cSource.h"

#include "compiler/Import/Llama2cCheckpoint.h"

namespace quill {

namespace {

class Llama2cModel : public ModelSource {
public:
  static ErrorOr<std::unique_ptr<ModelSource>> open(const std::string &path) {
    auto checkpoint = Llama2cCheckpoint::open(path);
    if (!checkpoint)
      return checkpoint.status();
    std::unique_ptr<Llama2cModel> model(new Llama2cModel(checkpoint.take()));
    model->path_ = path;
    model->format_ = model->checkpoint_.formatVersion() == 1 ? "llama2.c version 1 (ak42), fp32"
                                                             : "llama2.c legacy, fp32";
    model->config_ = model->checkpoint_.config();
    std::unordered_map<std::string, ImportedTensor> byName;
    for (const WeightTensor &w : model->checkpoint_.weights()) {
      ImportedTensor t;
      t.name = t.sourceName = w.name;
      t.shape = w.shape;
      t.sourceFile = path;
      t.dtype = SourceDType::F32;
      t.data = reinterpret_cast<const uint8_t *>(w.data);
      byName.emplace(w.name, std::move(t));
    }
    if (Status s = model->setTensors(std::move(byName)); !s)
      return s;
    return std::unique_ptr<ModelSource>(std::move(model));
  }

  ErrorOr<TokenizerData> tokenizer() const override {
    return Status::error(path_ + ": llama2.c checkpoints carry no tokenizer; "
                                 "give one with --tokenizer");
  }

private:
  explicit Llama2cModel(Llama2cCheckpoint checkpoint) : checkpoint_(std::move(checkpoint)) {}

  Llama2cCheckpoint checkpoint_;
};

} // namespace

ErrorOr<std::unique_ptr<ModelSource>> openLlama2cModel(const std::string &path) {
  return Llama2cModel::open(path);
}

} // namespace quill
