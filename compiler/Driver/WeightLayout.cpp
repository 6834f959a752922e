// Streaming the weight blob: tensors in offset order, each in the encoding
// the plan gives it (fp32 unless the step keeps another).
#include "compiler/Driver/WeightLayout.h"
#include "compiler/Import/RowGroups.h"

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

/// The encoding the plan stores weight `name` in.
SourceDType encodingOf(const ExtractedSchedule &plan, const std::string &name) {
  auto it = plan.weightEncodings.find(name);
  if (it == plan.weightEncodings.end())
    return SourceDType::F32;
  return dtypeFromName(it->second).value_or(SourceDType::F32);
}

uint64_t encodedBytes(const ImportedTensor &tensor, SourceDType encoding) {
  return dtypeBytes(encoding, uint64_t(tensor.numElements())).value_or(UINT64_MAX / 2);
}

/// Weight `name` as the bytes of its planned encoding.
ErrorOr<std::vector<uint8_t>> encodedTensor(const ModelSource &model, const ExtractedSchedule &plan,
                                            const std::string &name) {
  const ImportedTensor *tensor = model.find(name);
  if (!tensor)
    return Status::error(model.path() + ": the model has no tensor '" + name + "'");
  SourceDType encoding = encodingOf(plan, name);
  std::vector<uint8_t> bytes(encodedBytes(*tensor, encoding));
  if (Status s = model.readTensorEncoded(*tensor, encoding, bytes.data()); !s)
    return s;
  return bytes;
}

/// A packed weight's parts with an RMSNorm weight folded in: f32 only.
ErrorOr<std::vector<std::vector<uint8_t>>> scaledParts(const ModelSource &model,
                                                       const WeightPack &pack) {
  auto scale = model.readTensor(pack.scale);
  if (!scale)
    return scale.status();
  std::vector<std::vector<uint8_t>> parts;
  for (const std::string &name : pack.parts) {
    auto part = model.readTensor(name);
    if (!part)
      return part.status();
    // Column k of every row times scale[k].
    for (size_t i = 0; i < part->size(); ++i)
      (*part)[i] *= (*scale)[i % scale->size()];
    const auto *bytes = reinterpret_cast<const uint8_t *>(part->data());
    parts.emplace_back(bytes, bytes + part->size() * sizeof(float));
  }
  return parts;
}

} // namespace

std::vector<WeightEntry> weightTable(const ModelSource &model, const ExtractedSchedule &plan) {
  // SourceDType and WeightEncoding list the encodings in one order
  // (checked in TensorConversion.cpp).
  std::vector<WeightEntry> table;
  for (const Placement &p : placements(plan)) {
    std::vector<std::string> names = p.pack ? p.pack->parts : std::vector<std::string>{p.name};
    WeightEntry entry;
    entry.offset = p.offset;
    entry.encoding = static_cast<WeightEncoding>(encodingOf(plan, names.front()));
    if (p.pack)
      entry.rowGroups = uint32_t(p.pack->rowGroups);
    else if (auto groups = plan.weightRowGroups.find(p.name); groups != plan.weightRowGroups.end())
      entry.rowGroups = uint32_t(groups->second);
    for (const std::string &name : names) {
      const ImportedTensor *tensor = model.find(name);
      entry.name += (entry.name.empty() ? "" : "+") + name;
      entry.elements += uint64_t(tensor->numElements());
      entry.bytes += encodedBytes(*tensor, encodingOf(plan, name));
    }
    table.push_back(std::move(entry));
  }
  return table;
}

Status checkWeightLayout(const ModelSource &model, const ExtractedSchedule &plan) {
  uint64_t end = 0;
  for (const Placement &p : placements(plan)) {
    std::vector<std::string> names = p.pack ? p.pack->parts : std::vector<std::string>{p.name};
    if (p.pack && !p.pack->scale.empty()) {
      const ImportedTensor *scale = model.find(p.pack->scale);
      const ImportedTensor *first = model.find(names.front());
      if (!scale || !first || scale->numElements() != first->shape.back() ||
          encodingOf(plan, names.front()) != SourceDType::F32)
        return Status::error(model.path() + ": cannot fold '" + p.pack->scale + "' into '" +
                             names.front() + "'");
    }
    uint64_t bytes = 0;
    for (const std::string &name : names) {
      const ImportedTensor *tensor = model.find(name);
      if (!tensor)
        return Status::error(model.path() + ": the model has no tensor '" + name + "'");
      if (!dtypeBytes(encodingOf(plan, name), uint64_t(tensor->numElements())))
        return Status::error(model.path() + ": tensor '" + tensor->sourceName + "' of " +
                             shapeString(tensor->shape) + " is not whole " +
                             dtypeName(encodingOf(plan, name)) + " blocks");
      bytes += encodedBytes(*tensor, encodingOf(plan, name));
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
    auto write = [&](const std::vector<uint8_t> &bytes) {
      sink(bytes.data(), bytes.size());
      at += bytes.size();
    };
    for (const Placement &p : placements(plan)) {
      padTo(p.offset);
      const std::string &first = p.pack ? p.pack->parts.front() : p.name;
      const ImportedTensor *source = model.find(first);
      const uint64_t rows = source && !source->shape.empty() ? uint64_t(source->shape.front()) : 1;
      if (!p.pack) {
        auto bytes = encodedTensor(model, plan, p.name);
        if (!bytes)
          return bytes.status();
        if (auto groups = plan.weightRowGroups.find(p.name); groups != plan.weightRowGroups.end())
          if (Status s = groupWeightRows(*bytes, encodingOf(plan, p.name), rows, groups->second);
              !s)
            return Status::error("weight '" + p.name + "': " + s.message());
        write(*bytes);
        continue;
      }
      std::vector<std::vector<uint8_t>> parts;
      if (!p.pack->scale.empty()) {
        auto scaled = scaledParts(model, *p.pack);
        if (!scaled)
          return scaled.status();
        parts = scaled.take();
      } else {
        for (const std::string &name : p.pack->parts) {
          auto part = encodedTensor(model, plan, name);
          if (!part)
            return part.status();
          parts.push_back(part.take());
        }
      }
      // The pack's rows: its parts one after another, or row r of part i
      // as row r * parts + i. Regrouped a group of rows at a time, so the
      // pack is never assembled whole.
      const uint64_t rowBytes = parts.front().size() / rows;
      const uint64_t groupBytes = uint64_t(std::max<int64_t>(p.pack->rowGroups, 1)) * rowBytes;
      if (p.pack->rowGroups && groupBytes == 0)
        return Status::error("weight '" + first + "': a pack of empty rows cannot be grouped");
      std::vector<uint8_t> group;
      Status grouping = Status::ok();
      auto emit = [&](const uint8_t *data, uint64_t n) {
        if (!p.pack->rowGroups) {
          sink(data, n);
          at += n;
          return;
        }
        // Whole rows arrive in order; a group is written once it is full.
        for (uint64_t taken = 0; taken < n && grouping;) {
          const uint64_t step = std::min(n - taken, groupBytes - group.size());
          group.insert(group.end(), data + taken, data + taken + step);
          taken += step;
          if (group.size() == groupBytes) {
            grouping = groupWeightRows(group, encodingOf(plan, first), uint64_t(p.pack->rowGroups),
                                       p.pack->rowGroups);
            if (grouping)
              write(group);
            group.clear();
          }
        }
      };
      if (!p.pack->interleave) {
        for (const auto &part : parts)
          emit(part.data(), part.size());
      } else {
        for (uint64_t r = 0; r < rows; ++r)
          for (const auto &part : parts)
            emit(part.data() + r * rowBytes, rowBytes);
      }
      if (grouping && !group.empty())
        grouping =
            Status::error("the rows are not whole groups of " + std::to_string(p.pack->rowGroups));
      if (!grouping)
        return Status::error("weight '" + first + "': " + grouping.message());
    }
    padTo(plan.schedule.weightBytes);
    return Status::ok();
  };
}

} // namespace quill
