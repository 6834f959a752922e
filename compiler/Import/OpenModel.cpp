// openModel: telling a model's format from the path and the first bytes.
#include "compiler/Import/Diagnostics.h"
#include "compiler/Import/GgufFile.h"
#include "compiler/Import/GgufModel.h"
#include "compiler/Import/HfLlamaModel.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/Llama2cSource.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/SafetensorsFile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace quill {

namespace {

ErrorOr<std::unique_ptr<ModelSource>> openAnyFormat(const std::string &path) {
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  if (error)
    return Status::error(path + ": cannot open: " + error.message());
  if (fs::is_directory(status)) {
    if (!fs::exists(fs::path(path) / "config.json", error))
      return Status::error(path + ": a directory without config.json is not "
                                  "a Hugging Face checkpoint");
    return openHfLlamaModel(path, "", path);
  }
  if (!fs::is_regular_file(status))
    return Status::error(path + ": not a regular file or a directory");

  // The first bytes decide; a file too short for any magic is left to the
  // llama2.c reader, which says what is missing.
  uint8_t head[16] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  in.read(reinterpret_cast<char *>(head), sizeof head);
  const size_t got = size_t(in.gcount());
  const uint64_t fileBytes = fs::file_size(path, error);
  if (error)
    return Status::error(path + ": cannot stat: " + error.message());

  uint32_t magic = 0;
  if (got >= 4)
    std::memcpy(&magic, head, 4);
  if (magic == kGgufMagic)
    return openGgufModel(path);
  if (magic == kLlama2cV1Magic)
    return openLlama2cModel(path);

  const fs::path parent = fs::absolute(path, error).parent_path();
  const bool besideConfig = !error && fs::exists(parent / "config.json", error);
  uint64_t headerBytes = 0;
  if (got >= 8)
    std::memcpy(&headerBytes, head, 8);
  const bool safetensors =
      got >= 9 && headerBytes >= 2 && headerBytes <= fileBytes - 8 && head[8] == '{';
  if (safetensors || fs::path(path).filename() == "config.json") {
    if (!besideConfig)
      return Status::error(path + ": a safetensors file needs config.json "
                                  "next to it");
    return openHfLlamaModel(parent.string(), safetensors ? path : "", path);
  }
  return openLlama2cModel(path);
}

} // namespace

ErrorOr<std::unique_ptr<ModelSource>> openModel(const std::string &path) {
  auto model = openAnyFormat(path);
  if (!model)
    return oneLine(model.status());
  return model;
}

} // namespace quill
