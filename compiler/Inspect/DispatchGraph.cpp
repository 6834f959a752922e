// Dispatch graphs: the schedules as dataflow between kernel launches.
#include "compiler/Inspect/DispatchGraph.h"

#include "compiler/Inspect/DispatchCost.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace quill {

namespace {

using namespace mlir;
namespace q = mlir::quill;

/// The layer an op's location names (loc("layer3"), perhaps inside a
/// fused location), or -1 for the model's own (embedding, final norm,
/// logits).
int64_t layerOf(Location loc) {
  int64_t layer = -1;
  loc->walk([&](Location inner) {
    auto name = dyn_cast<NameLoc>(inner);
    llvm::StringRef text = name ? name.getName().getValue() : llvm::StringRef();
    int64_t n;
    if (text.consume_front("layer") && !text.getAsInteger(10, n)) {
      layer = n;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return layer;
}

/// Layers drawn once: the layers whose dispatches do the same things in
/// the same order form a group, drawn as its first layer's dispatches.
struct LayerGroups {
  struct Group {
    std::vector<int64_t> layers;         ///< In order.
    std::vector<size_t> representatives; ///< The first layer's dispatches.
  };
  std::vector<Group> groups;
  std::map<size_t, size_t> representative;            ///< Dispatch -> the one drawn for it.
  std::map<size_t, std::pair<size_t, int64_t>> place; ///< Dispatch -> (group, layer).

  size_t drawnAs(size_t d) const {
    auto it = representative.find(d);
    return it == representative.end() ? d : it->second;
  }
  bool inLayer(size_t d) const { return place.count(d) != 0; }
};

LayerGroups groupLayers(const std::vector<int64_t> &layers,
                        const std::vector<std::string> &shapes) {
  std::map<int64_t, std::vector<size_t>> byLayer;
  for (size_t d = 0; d < layers.size(); ++d)
    if (layers[d] >= 0)
      byLayer[layers[d]].push_back(d);
  LayerGroups result;
  std::map<std::vector<std::string>, size_t> groupOf;
  for (const auto &[layer, members] : byLayer) {
    std::vector<std::string> key;
    for (size_t d : members)
      key.push_back(shapes[d]);
    auto [it, fresh] = groupOf.try_emplace(key, result.groups.size());
    if (fresh)
      result.groups.push_back({{}, members});
    LayerGroups::Group &group = result.groups[it->second];
    group.layers.push_back(layer);
    for (size_t i = 0; i < members.size(); ++i) {
      result.representative[members[i]] = group.representatives[i];
      result.place[members[i]] = {it->second, layer};
    }
  }
  return result;
}

/// "0-3, 5, 7-11": the layers of a group.
std::string layerList(const std::vector<int64_t> &layers) {
  std::string text;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
      ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(layers[i]) +
            (j > i ? "-" + std::to_string(layers[j]) : "");
    i = j + 1;
  }
  return text;
}

/// A byte range of one memory space ("kv_pool" ranges are sections).
struct Range {
  std::string space;
  int64_t begin = 0, end = 0;
};

Range rangeOf(q::BindingAttr binding) {
  if (binding.getSpace() == "kv_pool")
    return {"kv_pool", binding.getOffset(), binding.getOffset() + 1};
  return {binding.getSpace().str(), binding.getOffset(), binding.getOffset() + binding.getBytes()};
}

/// One buffer from a dispatch (or the step's input, -1) to a later one.
struct Flow {
  int64_t from = -1;
  size_t to = 0;
  int64_t bytes = 0;
  std::string space;
};

/// Which earlier dispatch wrote each part of every range a dispatch reads.
std::vector<Flow> dataflow(std::vector<q::DispatchOp> dispatches) {
  struct Written {
    Range range;
    int64_t writer;
  };
  std::vector<Written> writes; // Oldest first.
  std::vector<Flow> flows;
  for (size_t d = 0; d < dispatches.size(); ++d) {
    ArrayRef<Attribute> bindings = dispatches[d].getBindings().getValue();
    std::optional<ArrayRef<int64_t>> written = dispatches[d].getWrites();
    auto writes_ = [&](size_t i) {
      return !written || std::find(written->begin(), written->end(), int64_t(i)) != written->end();
    };
    for (size_t i = 0; i < bindings.size(); ++i) {
      Range read = rangeOf(cast<q::BindingAttr>(bindings[i]));
      if (writes_(i) || read.space == "weights")
        continue;
      // Newest writers first; what they cover is not looked for further.
      std::vector<std::pair<int64_t, int64_t>> open = {{read.begin, read.end}};
      for (auto w = writes.rbegin(); w != writes.rend() && !open.empty(); ++w) {
        if (w->range.space != read.space)
          continue;
        std::vector<std::pair<int64_t, int64_t>> left;
        int64_t covered = 0;
        for (auto [b, e] : open) {
          int64_t lo = std::max(b, w->range.begin), hi = std::min(e, w->range.end);
          if (lo >= hi) {
            left.push_back({b, e});
            continue;
          }
          covered += hi - lo;
          if (b < lo)
            left.push_back({b, lo});
          if (hi < e)
            left.push_back({hi, e});
        }
        if (covered)
          flows.push_back({w->writer, d, covered, read.space});
        open = std::move(left);
      }
      if (read.space == "input")
        for (auto [b, e] : open)
          flows.push_back({-1, d, e - b, read.space});
    }
    for (size_t i = 0; i < bindings.size(); ++i)
      if (writes_(i))
        writes.push_back({rangeOf(cast<q::BindingAttr>(bindings[i])), int64_t(d)});
  }
  return flows;
}

/// `text` escaped for a double-quoted DOT string.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n"; // A line break in a label.
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string bytesText(double bytes) { return humanFigure(bytes, "B"); }

/// A dispatch node's label lines.
std::string nodeLabel(const std::string &kernel, const DispatchCost &cost, q::DispatchOp d) {
  std::ostringstream label;
  label << kernel << "\n" << cost.op;
  if (!cost.weightType.empty())
    label << "\nweights " << cost.weightType << " " << bytesText(double(cost.weightBytes));
  if (cost.flops > 0 || cost.flopsPerPosition == 0)
    label << "\n" << humanFigure(cost.flops, "FLOP");
  if (cost.flopsPerPosition > 0)
    label << (cost.flops > 0 ? " + " : "\n") << humanFigure(cost.flopsPerPosition, "FLOP")
          << " per cached position";
  label << "\nmoves "
        << bytesText(double(cost.weightBytes + cost.activationBytes + cost.kvBytesWritten));
  if (cost.kvBytesPerPosition > 0)
    label << " + KV " << bytesText(cost.kvBytesPerPosition) << " per position";
  label << "\n" << d.getWork() << (d.getWork() == 1 ? " unit" : " units");
  if (d.getWork() > 1)
    label << ", " << d.getGrain() << " per chunk";
  return label.str();
}

/// The schedule's name as a reader says it.
std::string stepTitle(llvm::StringRef name) {
  if (name == "step")
    return "decode step (one token)";
  if (name == "prefill")
    return "prefill step (a chunk of prompt tokens)";
  if (name == "batch")
    return "batch step (one token of each sequence, paged KV cache)";
  return name.str();
}

void writeSchedule(std::ostringstream &dot, q::ScheduleOp schedule, ModuleOp module) {
  const std::string step = schedule.getName().str();
  std::vector<q::DispatchOp> dispatches;
  for (auto d : schedule.getBody().getOps<q::DispatchOp>())
    dispatches.push_back(d);
  std::vector<std::string> names;
  std::vector<DispatchCost> costs;
  // Layers repeat by what their dispatches do: a mixed file's layers may
  // launch kernels that differ only in a weight's type.
  std::vector<std::string> shapes;
  for (q::DispatchOp d : dispatches) {
    names.push_back(d.getKernel().str());
    auto kernel = module.lookupSymbol<func::FuncOp>(d.getKernel());
    costs.push_back(kernel ? dispatchCost(d, kernel) : DispatchCost{});
    shapes.push_back(costs.back().op + "/" + std::to_string(d.getWork()));
  }
  std::vector<int64_t> layers;
  for (q::DispatchOp d : dispatches)
    layers.push_back(layerOf(d.getLoc()));
  const LayerGroups groups = groupLayers(layers, shapes);
  auto nodeId = [&](int64_t d) {
    return d < 0 ? quoted(step + "_input") : quoted(step + "_d" + std::to_string(d));
  };

  dot << "  subgraph " << quoted("cluster_" + step) << " {\n";
  dot << "    label="
      << quoted(stepTitle(step) + ": " + std::to_string(dispatches.size()) + " dispatches")
      << ";\n    style=rounded;\n";
  // The dispatches each drawn node stands for.
  std::map<size_t, std::vector<size_t>> members;
  for (size_t d = 0; d < dispatches.size(); ++d)
    members[groups.drawnAs(d)].push_back(d);
  auto writeNode = [&](size_t d, const std::string &indent) {
    std::string list;
    // Other kernels the other layers launch (another weight type), how often.
    std::map<std::string, int> others;
    for (size_t m : members[d]) {
      list += (list.empty() ? "" : " ") + std::to_string(m);
      if (names[m] != names[d])
        ++others[names[m]];
    }
    std::string label = nodeLabel(names[d], costs[d], dispatches[d]);
    for (const auto &[name, count] : others)
      label += "\nin " + std::to_string(count) + (count == 1 ? " layer: " : " layers: ") + name;
    dot << indent << nodeId(int64_t(d)) << " [label=" << quoted(label)
        << ", comment=" << quoted("dispatches " + list)
        << (costs[d].flopsPerPosition > 0 ? ", fillcolor=\"#fde2c8\"" : "") << "];\n";
  };
  for (size_t d = 0; d < dispatches.size(); ++d)
    if (!groups.inLayer(d))
      writeNode(d, "    ");
  for (size_t g = 0; g < groups.groups.size(); ++g) {
    const LayerGroups::Group &group = groups.groups[g];
    const size_t count = group.layers.size();
    std::string title = "layer x " + std::to_string(count);
    if (groups.groups.size() > 1)
      title = (count == 1 ? "layer " : "layers ") + layerList(group.layers) + " (x" +
              std::to_string(count) + ")";
    title += ": " + std::to_string(group.representatives.size()) + " dispatches each";
    dot << "    subgraph " << quoted("cluster_" + step + "_layers" + std::to_string(g)) << " {\n";
    dot << "      label=" << quoted(title)
        << ";\n      style=\"rounded,filled\";\n      fillcolor=\"#eef3fb\";\n";
    for (size_t d : group.representatives)
      writeNode(d, "      ");
    dot << "    }\n";
  }
  // Edges between the drawn nodes, once each: the largest buffer, and
  // whether it crosses from one layer to the next.
  struct Edge {
    int64_t bytes = 0;
    std::set<std::string> spaces;
    bool nextLayer = false;
  };
  std::map<std::pair<int64_t, int64_t>, Edge> edges;
  bool usesInput = false;
  for (const Flow &f : dataflow(dispatches)) {
    int64_t from = f.from < 0 ? -1 : int64_t(groups.drawnAs(size_t(f.from)));
    int64_t to = int64_t(groups.drawnAs(f.to));
    Edge &e = edges[{from, to}];
    e.bytes = std::max(e.bytes, f.bytes);
    e.spaces.insert(f.space);
    if (f.from >= 0 && groups.inLayer(size_t(f.from)) && groups.inLayer(f.to) &&
        groups.place.at(size_t(f.from)).second != groups.place.at(f.to).second)
      e.nextLayer = true;
    usesInput |= f.from < 0;
  }
  if (usesInput)
    dot << "    " << nodeId(-1) << " [label="
        << quoted(step == "batch" ? "inputs: token ids, positions, block tables"
                                  : "input: token ids")
        << ", shape=ellipse];\n";
  for (const auto &[ends, e] : edges) {
    std::string label = bytesText(double(e.bytes));
    if (e.spaces.count("kv") || e.spaces.count("kv_pool"))
      label = "KV " + label;
    dot << "    " << nodeId(ends.first) << " -> " << nodeId(ends.second)
        << " [label=" << quoted(e.nextLayer ? label + " (to the next layer)" : label);
    if (e.nextLayer)
      dot << ", style=dashed, constraint=false";
    else if (e.spaces.count("kv") || e.spaces.count("kv_pool"))
      dot << ", color=\"#c0392b\"";
    dot << "];\n";
  }
  // The logits leave from their writer.
  q::BindingAttr logits = schedule.getLogits();
  for (int64_t d = int64_t(dispatches.size()) - 1; d >= 0; --d) {
    bool wrote = false;
    ArrayRef<Attribute> bindings = dispatches[size_t(d)].getBindings().getValue();
    for (Attribute a : bindings) {
      auto b = cast<q::BindingAttr>(a);
      if (b.getSpace() == logits.getSpace() && b.getOffset() <= logits.getOffset() &&
          logits.getOffset() + logits.getBytes() <= b.getOffset() + b.getBytes())
        wrote = true;
    }
    if (wrote) {
      dot << "    " << quoted(step + "_logits") << " [label=\"logits\", shape=ellipse];\n";
      dot << "    " << nodeId(int64_t(groups.drawnAs(size_t(d)))) << " -> "
          << quoted(step + "_logits") << " [label=" << quoted(bytesText(double(logits.getBytes())))
          << "];\n";
      break;
    }
  }
  dot << "  }\n";
}

} // namespace

std::string dispatchGraphDot(ModuleOp module, const std::string &title) {
  std::ostringstream dot;
  dot << "digraph " << quoted(title) << " {\n";
  dot << "  label=" << quoted(title + ": the dispatches of each step after fusion") << ";\n";
  dot << "  labelloc=t;\n  fontname=\"Helvetica\";\n  compound=true;\n";
  dot << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
         "fontname=\"Helvetica\", fontsize=10];\n";
  dot << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (auto schedule : module.getOps<q::ScheduleOp>())
    writeSchedule(dot, schedule, module);
  dot << "}\n";
  return dot.str();
}

} // namespace quill
