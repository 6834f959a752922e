// The trace recorder under threads: stopping while other threads record
// spans must neither race their appends (the TSan job runs this) nor
// write a torn event, and a trace holds only its own events.
#include "runtime/support/Trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <vector>

namespace quill {
namespace {

std::string tracePath(const char *name) {
  return testing::TempDir() + "/quill-trace-" + std::to_string(getpid()) + "-" + name + ".json";
}

nlohmann::json readTrace(const std::string &path) {
  std::ifstream in(path);
  nlohmann::json trace = nlohmann::json::parse(in); // Throws (fails the test) if torn.
  std::remove(path.c_str());
  return trace;
}

/// The "X" events named `name` in a trace.
int countSpans(const nlohmann::json &trace, const std::string &name) {
  int n = 0;
  for (const auto &event : trace.at("traceEvents"))
    n += event.at("ph") == "X" && event.at("name") == name;
  return n;
}

TEST(Trace, StoppingWhileThreadsRecordWritesWholeEvents) {
  // Several rounds: each stop is one chance for a thread to be appending.
  for (int round = 0; round < 5; ++round) {
    trace::start();
    std::atomic<bool> running{true};
    std::atomic<int> spans{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&] {
        // Enough spans to fill more than one chunk of a thread's buffer.
        while (running.load(std::memory_order_relaxed)) {
          trace::Scope span("test", "work", trace::Args().add("i", spans.fetch_add(1)));
        }
      });
    while (spans.load() < 30000)
      std::this_thread::yield();
    const std::string path = tracePath("threads");
    const bool wrote = trace::stopAndWrite(path).isOk();
    const int atStop = spans.load();
    running = false;
    for (std::thread &thread : threads)
      thread.join();
    ASSERT_TRUE(wrote);
    const nlohmann::json trace = readTrace(path);
    const int written = countSpans(trace, "work");
    // Of the first 30000 spans, each thread may have had one still open
    // at the stop; none begun after it was read can have ended before it.
    EXPECT_GE(written, 30000 - 3) << "round " << round;
    EXPECT_LE(written, atStop) << "round " << round;
    for (const auto &event : trace.at("traceEvents")) {
      if (event.at("ph") == "X") {
        EXPECT_GE(event.at("dur").get<double>(), 0.0);
      }
    }
  }
}

TEST(Trace, EachTraceHoldsOnlyItsOwnEvents) {
  trace::start();
  {
    trace::Scope span("test", "first");
  }
  const std::string first = tracePath("first");
  ASSERT_TRUE(trace::stopAndWrite(first).isOk());
  {
    trace::Scope span("test", "between");
  } // Not recording: dropped.
  trace::start();
  std::thread worker([] { trace::Scope span("test", "second"); });
  worker.join();
  trace::instant("test", "mark");
  const std::string second = tracePath("second");
  ASSERT_TRUE(trace::stopAndWrite(second).isOk());

  const nlohmann::json one = readTrace(first), two = readTrace(second);
  EXPECT_EQ(countSpans(one, "first"), 1);
  EXPECT_EQ(countSpans(one, "second"), 0);
  EXPECT_EQ(countSpans(two, "first"), 0);
  EXPECT_EQ(countSpans(two, "between"), 0);
  EXPECT_EQ(countSpans(two, "second"), 1);
  int marks = 0;
  for (const auto &event : two.at("traceEvents"))
    marks += event.at("ph") == "i" && event.at("name") == "mark";
  EXPECT_EQ(marks, 1);
}

TEST(Trace, StartingAgainWhileRecordingBeginsAFreshTrace) {
  trace::start();
  std::thread early([] { trace::Scope span("test", "early"); });
  early.join();
  trace::start(); // Without a stop: the events so far are dropped.
  std::thread late([] { trace::Scope span("test", "late"); });
  late.join();
  const std::string path = tracePath("restart");
  ASSERT_TRUE(trace::stopAndWrite(path).isOk());
  const nlohmann::json trace = readTrace(path);
  EXPECT_EQ(countSpans(trace, "early"), 0);
  EXPECT_EQ(countSpans(trace, "late"), 1);
}

} // namespace
} // namespace quill
