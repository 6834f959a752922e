// Streaming the weight blob: tensors in offset order, converted to fp32.
#include "compiler/Driver/WeightLayout.h"

#include <algorithm>
#include <vector>

namespace quill {

namespace {

/// One placed weight: a named tensor, or a pack of several.
struct Placement {
  uint64_t offset;
  std::string name; ///< Plain weights.
  const WeightPack *pack = nullptr;
};

std::vector<Placement> placements(const ExtractedSchedule &plan) {
  std::vector<Placement> out;
  for (const auto &[name, offset] : plan.weightOffsets)
    out.push_back({offset, name, nullptr});
  for (const WeightPack &pack : plan.weightPacks)
    out.push_back({pack.offset, "", &pack});
  std::sort(out.begin(), out.end(),
            [](const Placement &a, const Placement &b) { return a.offset < b.offset; });
  return out;
}

uint64_t tensorBytes(const ImportedTensor &tensor) {
  return uint64_t(tensor.numElements()) * sizeof(float);
}

} // namespace

Status checkWeightLayout(const ModelSource &model, const ExtractedSchedule &plan) {
  uint64_t end = 0;
  for (const Placement &p : placements(plan)) {
    std::vector<std::string> names = p.pack ? p.pack->parts : std::vector<std::string>{p.name};
    if (p.pack && !p.pack->scale.empty()) {
      const ImportedTensor *scale = model.find(p.pack->scale);
      const ImportedTensor *first = model.find(names.front());
      if (!scale || !first || scale->numElements() != first->shape.back())
        return Status::error(model.path() + ": cannot fold '" + p.pack->scale + "' into '" +
                             names.front() + "'");
    }
    uint64_t bytes = 0;
    for (const std::string &name : names) {
      const ImportedTensor *tensor = model.find(name);
      if (!tensor)
        return Status::error(model.path() + ": the model has no tensor '" + name + "'");
      bytes += tensorBytes(*tensor);
    }
    if (p.offset < end || p.offset % alignof(float) != 0 ||
        bytes > plan.schedule.weightBytes - std::min(p.offset, plan.schedule.weightBytes))
      return Status::error("weight '" + names.front() + "' does not fit the planned weight blob");
    end = p.offset + bytes;
  }
  return Status::ok();
}

SectionProducer weightSection(const ModelSource &model, const ExtractedSchedule &plan) {
  return [&model, &plan](const SectionSink &sink) -> Status {
    static const char zeros[4096] = {};
    uint64_t at = 0;
    auto padTo = [&](uint64_t offset) {
      for (; at < offset; at += std::min<uint64_t>(offset - at, sizeof zeros))
        sink(zeros, std::min<uint64_t>(offset - at, sizeof zeros));
    };
    for (const Placement &p : placements(plan)) {
      padTo(p.offset);
      if (!p.pack) {
        auto data = model.readTensor(p.name);
        if (!data)
          return data.status();
        sink(data->data(), data->size() * sizeof(float));
        at += data->size() * sizeof(float);
        continue;
      }
      std::vector<std::vector<float>> parts;
      for (const std::string &name : p.pack->parts) {
        auto part = model.readTensor(name);
        if (!part)
          return part.status();
        parts.push_back(part.take());
      }
      if (!p.pack->scale.empty()) {
        // A folded RMSNorm weight: column k of every row times scale[k].
        auto scale = model.readTensor(p.pack->scale);
        if (!scale)
          return scale.status();
        for (auto &part : parts)
          for (size_t i = 0; i < part.size(); ++i)
            part[i] *= (*scale)[i % scale->size()];
      }
      if (p.pack->interleave) {
        // Row r of part i is written as row r * parts + i.
        uint64_t columns = uint64_t(model.find(p.pack->parts.front())->shape.back());
        uint64_t rows = parts.front().size() / columns;
        for (uint64_t r = 0; r < rows; ++r)
          for (const auto &part : parts)
            sink(part.data() + r * columns, columns * sizeof(float));
      } else {
        for (const auto &part : parts)
          sink(part.data(), part.size() * sizeof(float));
      }
      for (const auto &part : parts)
        at += part.size() * sizeof(float);
    }
    padTo(plan.schedule.weightBytes);
    return Status::ok();
  };
}

} // namespace quill
