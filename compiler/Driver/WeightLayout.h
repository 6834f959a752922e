// Lays the model's weights out as the memory plan says, streamed into the
// artifact while it is written: the compiler never holds the blob in memory.
#pragma once

#include "compiler/Driver/ScheduleExtraction.h"
#include "compiler/Import/ModelSource.h"
#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/artifact/WeightTable.h"

namespace quill {

/// Checks that every planned weight exists in `model` and fits its place.
Status checkWeightLayout(const ModelSource &model, const ExtractedSchedule &plan);

/// The table of what the Weights section holds, in offset order; `plan`
/// must have passed checkWeightLayout.
std::vector<WeightEntry> weightTable(const ModelSource &model, const ExtractedSchedule &plan);

/// The Weights section: plain weights and packed ones (concatenated or
/// row-interleaved) at their offsets, zero padding between, one tensor in
/// memory at a time. `model` and `plan` must outlive the producer.
SectionProducer weightSection(const ModelSource &model, const ExtractedSchedule &plan);

} // namespace quill
