// Inspection: quill-compile --emit=dot and --graph draw every step's
// dispatch graph. Graphviz (installed by setup) must parse and render it,
// and its nodes must stand for the artifact's dispatches exactly: each
// dispatch of each schedule once, under its own kernel's name.
// quill-run --trace writes trace-event JSON whose kernel events are
// --profile's launches and whose scheduler events are the run's decisions.
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace quill::test {
namespace {

/// A node of the canonical DOT: its id, first label line, and the schedule
/// indices in its comment ("dispatches 1 6 11").
struct GraphNode {
  std::string label;
  std::vector<size_t> dispatches;
};

/// Nodes by id, from `dot -Tcanon` output (one node statement per line).
std::map<std::string, GraphNode> parseCanonical(const std::string &canon) {
  std::map<std::string, GraphNode> nodes;
  // Attributes come in any order; ids may be quoted.
  static const std::regex idPattern(R"re(^\s*"?(\w+)"?\s*\[)re");
  static const std::regex commentPattern(R"re(comment="dispatches ([0-9 ]+)")re");
  static const std::regex labelPattern(R"re(label="([^"]*)")re");
  std::istringstream lines(canon);
  std::string line, statement;
  while (std::getline(lines, line)) {
    // -Tcanon spreads a statement's attributes over lines, ';' ends it
    // (and '{' or '}' a line of their own).
    statement += line;
    if (line.empty() || (line.back() != ';' && line.back() != '{' && line.back() != '}'))
      continue;
    std::smatch id, comment, label;
    if (std::regex_search(statement, id, idPattern) &&
        std::regex_search(statement, comment, commentPattern) &&
        std::regex_search(statement, label, labelPattern)) {
      GraphNode node;
      node.label = label[1];
      std::istringstream indices(comment[1].str());
      size_t i;
      while (indices >> i)
        node.dispatches.push_back(i);
      nodes[id[1]] = node;
    }
    statement.clear();
  }
  return nodes;
}

/// Each dispatch of `schedule` is in exactly one `step`_ node, whose label
/// names the kernel it launches.
void expectNodesCoverSchedule(const std::map<std::string, GraphNode> &nodes,
                              const std::string &step, const Schedule &schedule) {
  std::vector<int> seen(schedule.dispatches.size(), 0);
  size_t drawn = 0;
  for (const auto &[id, node] : nodes) {
    if (id.rfind(step + "_d", 0) != 0)
      continue;
    ++drawn;
    for (size_t d : node.dispatches) {
      ASSERT_LT(d, schedule.dispatches.size()) << step << " node " << id;
      ++seen[d];
      // The node's kernel first; another layer's kernels after "layers: ".
      const std::string &kernel = schedule.kernels[schedule.dispatches[d].kernel];
      EXPECT_TRUE(node.label.rfind(kernel + "\\n", 0) == 0 ||
                  node.label.find(": " + kernel) != std::string::npos)
          << step << " dispatch " << d << " (" << kernel << ") drawn as " << id << ": "
          << node.label;
    }
  }
  for (size_t d = 0; d < seen.size(); ++d)
    EXPECT_EQ(seen[d], 1) << step << " dispatch " << d << " is drawn " << seen[d] << " times";
  // The layers are drawn once: fewer nodes than dispatches.
  EXPECT_LT(drawn, schedule.dispatches.size()) << step;
}

TEST(Inspect, DispatchGraphDrawsEveryDispatchOfEveryStepOnce) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  const std::string dotFile = tempDir() + "/inspect-graph.dot";
  std::string path = compileArtifact(model, sharedModel("stories260K/tok512.bin"), "inspect-graph",
                                     "--graph " + quote(dotFile));
  ASSERT_FALSE(path.empty());
  auto artifact = Artifact::open(path);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();

  CommandResult canon = run("dot -Tcanon " + quote(dotFile));
  ASSERT_EQ(canon.exitCode, 0) << "Graphviz's dot (setup installs graphviz): " << canon.err;
  auto nodes = parseCanonical(canon.out);
  expectNodesCoverSchedule(nodes, "step", artifact->schedule());
  ASSERT_NE(artifact->prefillSchedule(), nullptr);
  expectNodesCoverSchedule(nodes, "prefill", *artifact->prefillSchedule());
  ASSERT_NE(artifact->batchSchedule(), nullptr);
  expectNodesCoverSchedule(nodes, "batch", artifact->batchSchedule()->schedule);

  // stories260K's 5 layers are one cluster each step, with their count.
  std::string dot = readFile(dotFile);
  EXPECT_NE(dot.find("layer x 5: 5 dispatches each"), std::string::npos) << dot;
  EXPECT_NE(dot.find("layer x 5: 11 dispatches each"), std::string::npos) << dot;

  // It renders, and --emit=dot prints the same graph without an artifact.
  CommandResult svg = run("dot -Tsvg " + quote(dotFile));
  ASSERT_EQ(svg.exitCode, 0) << svg.err;
  EXPECT_NE(svg.out.find("<svg"), std::string::npos);
  CommandResult emitted = run(quote(tool("quill-compile")) + " " + quote(model) + " --emit=dot");
  ASSERT_EQ(emitted.exitCode, 0) << emitted.err;
  EXPECT_EQ(emitted.out, dot);
}

TEST(Inspect, DispatchGraphFiguresFollowTheShapes) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --emit=dot");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // stories260K: dim 64, hidden 172, 8 heads of 8 (4 kv heads), vocab 512,
  // context 512, f32. The decode step's products are 2 FLOPs per weight:
  // logits 512 x 64, the gate-up pack 344 x 64; attention reads 4 FLOPs
  // per query element (64) and a key and a value row (32 floats each) per
  // cached position.
  EXPECT_NE(r.out.find("logits_64_512x64\\nlogits\\nweights f32 131 kB\\n65.5 kFLOP"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("linear+rmsnorm+swiglu\\nweights f32 88.1 kB\\n44 kFLOP"),
            std::string::npos);
  EXPECT_NE(r.out.find("256 FLOP per cached position\\nmoves 512 B + KV 256 B per position"),
            std::string::npos);
}

TEST(Inspect, LayersThatDifferAreDrawnAsTheirOwnGroups) {
  // q4_k_m keeps attn_v and ffn_down in Q6_K in llama.cpp's layers: of 8,
  // the first and last eighth and every third from the first eighth's end
  // (0, 3, 6, 7). Their q, k and v then differ in type and are not fused
  // into one projection: those layers launch other kernels, so the decode
  // step draws two groups of layers, each once.
  ModelConfig config = llamaShape(256, 512, 8, 4, 4, 320, 64);
  std::string model = synthesizeModel(config, "inspect-mixed", 0, 7);
  const std::string dotFile = tempDir() + "/inspect-mixed.dot";
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) +
                        " --quantize=q4_k_m --emit=dot > " + quote(dotFile));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r.out = readFile(dotFile);
  EXPECT_NE(r.out.find("\"layers 0, 3, 6-7 (x4): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"layers 1-2, 4-5 (x4): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights q6_k"), std::string::npos);
  EXPECT_NE(r.out.find("weights q4_k"), std::string::npos);
  CommandResult canon = run("dot -Tcanon " + quote(dotFile));
  EXPECT_EQ(canon.exitCode, 0) << canon.err;
}

TEST(Inspect, GraphToAnUnwritablePathIsOneLine) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  CommandResult r =
      run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
          quote(sharedModel("stories260K/tok512.bin")) + " -o " +
          quote(tempDir() + "/inspect-bad.qm") + " --graph /nonexistent-dir/graph.dot");
  expectCleanFailure(r, "/nonexistent-dir/graph.dot: cannot write");
}

/// The trace's events, after checking each has what the trace-event format
/// asks of its phase (ph, ts, tid; dur for spans).
std::vector<nlohmann::json> readTrace(const std::string &path) {
  auto json = nlohmann::json::parse(readFile(path), nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(json.is_object() && json["traceEvents"].is_array()) << path;
  std::vector<nlohmann::json> events;
  if (!json.is_object() || !json["traceEvents"].is_array())
    return events;
  for (const auto &e : json["traceEvents"]) {
    EXPECT_TRUE(e["ph"].is_string() && e["name"].is_string() && e["tid"].is_number_integer() &&
                e["pid"].is_number_integer() && e["ts"].is_number())
        << e.dump();
    if (e["ph"] == "X")
      EXPECT_TRUE(e["dur"].is_number() && e["dur"].get<double>() >= 0) << e.dump();
    events.push_back(e);
  }
  return events;
}

/// How many events of `category` there are by name.
std::map<std::string, long long> countByName(const std::vector<nlohmann::json> &events,
                                             const std::string &category) {
  std::map<std::string, long long> counts;
  for (const auto &e : events)
    if (e.value("cat", "") == category)
      ++counts[e["name"].get<std::string>()];
  return counts;
}

TEST(Inspect, TraceKernelEventsAreProfileLaunches) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string path =
      compileArtifact(model, sharedModel("stories260K/tok512.bin"), "inspect-trace", "");
  ASSERT_FALSE(path.empty());
  const std::string traceFile = tempDir() + "/inspect-trace.json";
  // A prompt longer than a prefill chunk (64 tokens), then decode steps,
  // sampled through a chain.
  std::string prompt;
  for (int i = 0; i < 10; ++i)
    prompt += "Once upon a time there was a little girl. ";
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) +
                        " -n 12 --temp 0.8 --top-k 40 --seed 3 --threads 2 --profile --prompt " +
                        quote(prompt) + " --trace " + quote(traceFile));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<nlohmann::json> events = readTrace(traceFile);
  std::map<std::string, long long> launches;
  for (const auto &[kernel, row] : parseProfile(r.err))
    launches[kernel] = row.launches;
  ASSERT_FALSE(launches.empty()) << r.err;
  EXPECT_EQ(countByName(events, "kernel"), launches);
  std::map<std::string, long long> steps = countByName(events, "step");
  EXPECT_GE(steps["prefill step"], 1);
  EXPECT_GE(steps["decode step"], 11);
  // Every sampled token ran the chain: top-k, temperature, dist (one each).
  std::map<std::string, long long> sampling = countByName(events, "sampling");
  EXPECT_EQ(sampling["top-k"], 12);
  EXPECT_EQ(sampling["dist"], 12);
  // The threads are named; every event's thread is one of them.
  std::set<long long> named, used;
  for (const auto &e : events)
    (e["ph"] == "M" ? named : used).insert(e["tid"].get<long long>());
  for (long long tid : used)
    EXPECT_TRUE(named.count(tid)) << tid;
}

TEST(Inspect, TraceRecordsTheSchedulersDecisions) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string path =
      compileArtifact(model, sharedModel("stories260K/tok512.bin"), "inspect-trace-batch", "");
  ASSERT_FALSE(path.empty());
  const std::string traceFile = tempDir() + "/inspect-trace-samples.json";
  // Three samples of one prompt: one admission, two forks of its cache,
  // three sequences' blocks freed, one batch step per token.
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) +
                        " -n 6 --ignore-eos --n-samples 3 --seed 1 --prompt 'Once upon' --trace " +
                        quote(traceFile));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<nlohmann::json> events = readTrace(traceFile);
  EXPECT_EQ(countByName(events, "scheduler")["admit"], 1);
  EXPECT_EQ(countByName(events, "kv")["fork"], 2);
  EXPECT_EQ(countByName(events, "kv")["free blocks"], 3);
  EXPECT_EQ(countByName(events, "step")["batch step"], 6);

  // Four prompts with room for two at a time: two wait, then are admitted.
  const std::string prompts = tempDir() + "/inspect-prompts.txt";
  std::FILE *f = std::fopen(prompts.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("Once upon a time\nThe cat\nA dog ran\nLily said\n", f);
  std::fclose(f);
  r = run(quote(tool("quill-run")) + " " + quote(path) + " -n 4 --ignore-eos --batch 2" +
          " --batch-file " + quote(prompts) + " --trace " + quote(traceFile));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  events = readTrace(traceFile);
  std::map<std::string, long long> decisions = countByName(events, "scheduler");
  EXPECT_EQ(decisions["admit"], 4);
  EXPECT_GE(decisions["wait"], 1);
  for (const auto &e : events)
    if (e["name"] == "wait")
      EXPECT_EQ(e["args"]["reason"], "no free sequence slot") << e.dump();
}

/// Occurrences of `needle` in `text`.
size_t occurrences(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

TEST(Inspect, TraceTimelineDrawsEverySpanOfTheStepsAsked) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string path =
      compileArtifact(model, sharedModel("stories260K/tok512.bin"), "inspect-timeline", "");
  ASSERT_FALSE(path.empty());
  const std::string traceFile = tempDir() + "/inspect-timeline.json";
  const std::string svg = tempDir() + "/inspect-timeline.svg";
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) +
                        " -n 8 --temp 0.8 --seed 2 --threads 2 --trace " + quote(traceFile));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string script = std::string(QUILL_SOURCE_DIR) + "/scripts/trace-timeline.py";
  r = run("python3 " + quote(script) + " " + quote(traceFile) + " -o " + quote(svg) +
          " --first-step 3 --steps 2");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The window: the main thread's steps 3 and 4; every span and instant
  // inside it is drawn, by category.
  std::vector<nlohmann::json> events = readTrace(traceFile);
  std::vector<std::pair<double, double>> steps;
  for (const auto &e : events)
    if (e["ph"] == "X" && e.value("cat", "") == "step" && e["tid"] == 1)
      steps.push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  std::sort(steps.begin(), steps.end());
  ASSERT_GE(steps.size(), 5u);
  const double start = steps[3].first, end = steps[4].second;
  std::map<std::string, size_t> inside;
  for (const auto &e : events) {
    if (e["ph"] != "X" && e["ph"] != "i")
      continue;
    const double ts = e["ts"], dur = e.value("dur", 0.0);
    if (ts >= start && ts + dur <= end)
      ++inside[e["ph"] == "i" ? "instant" : e.value("cat", "")];
  }
  EXPECT_EQ(inside["step"], 2u);
  EXPECT_GT(inside["kernel"], 2 * 20u);
  const std::string drawing = readFile(svg);
  for (const auto &[category, count] : inside)
    EXPECT_EQ(occurrences(drawing, "<g class=\"" + category + "\">"), count) << category;
  // Well-formed XML, and the threads by name.
  CommandResult parsed = run(
      "python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' " + quote(svg));
  EXPECT_EQ(parsed.exitCode, 0) << parsed.err;
  EXPECT_NE(drawing.find(">main</text>"), std::string::npos);
  // Steps the trace does not have: one line.
  r = run("python3 " + quote(script) + " " + quote(traceFile) + " -o " + quote(svg) +
          " --first-step 1000");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err.rfind("trace-timeline: the trace has ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(Inspect, TraceToAnUnwritablePathIsOneLine) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string path =
      compileArtifact(model, sharedModel("stories260K/tok512.bin"), "inspect-trace-bad", "");
  ASSERT_FALSE(path.empty());
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) +
                        " -n 2 --trace /nonexistent-dir/trace.json");
  expectCleanFailure(r, "/nonexistent-dir/trace.json: cannot write the trace");
}

} // namespace
} // namespace quill::test
