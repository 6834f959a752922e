// quill-run --trace: a Chrome trace-event recorder (the JSON that Perfetto
// and chrome://tracing open). Off, every site costs one atomic load
// and a branch; on, each thread appends to its own buffer (no lock after
// its first event), and the file is written once, at the end.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>

namespace quill::trace {

/// Whether events are being recorded.
bool enabled();

/// Starts recording (the calling thread is named "main").
void start();

/// Stops recording and writes every event so far as {"traceEvents": [...]}.
Status stopAndWrite(const std::string &path);

/// An event's args: up to four integers and two texts, kept as they are
/// (plain values: nothing to free, so building one costs next to nothing)
/// until the file is written.
class Args {
public:
  static constexpr int kMaxNumbers = 4;
  static constexpr int kMaxTexts = 2;
  Args &add(const char *key, int64_t value);
  /// `text` must outlive the trace: a literal (a scheduler's reason).
  Args &add(const char *key, const char *text);

  int numbers = 0, texts = 0;
  const char *keys[kMaxNumbers] = {};
  int64_t values[kMaxNumbers] = {};
  const char *textKeys[kMaxTexts] = {};
  const char *textValues[kMaxTexts] = {};
};

/// A copy of `name` that lives as long as the process, one per distinct
/// name: for span names whose owner (an artifact, which a quality run
/// closes before the trace is written) may go first.
const std::string *intern(const std::string &name);

/// A moment: a scheduler's decision (admit, wait, fork, free blocks, ...).
void instant(const char *category, const char *name, const Args &args = Args());

/// The event clock now (0 when tracing is off): the start of a span that
/// `span` records later, perhaps on another thread.
uint64_t now();

/// A span from `begin` (a `now()`) to now, recorded on the calling thread:
/// a kernel split across threads, which ends on whichever finishes last.
void span(const char *category, const std::string *name, uint64_t begin, const Args &args = Args());

/// A span from construction to destruction on this thread ("X" event):
/// a step, a kernel launch or a piece of one, a sampling pass. Records
/// nothing (and reads no clock) when tracing is off. The name must outlive
/// the trace (a literal, or a kernel name the artifact holds).
class Scope {
public:
  Scope(const char *category, const std::string *name, Args args = Args());
  Scope(const char *category, const char *name, Args args = Args());
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

private:
  void begin(const char *category, const char *name, const std::string *nameString, Args &&args);
  const char *category_ = nullptr;
  const char *name_ = nullptr;
  const std::string *nameString_ = nullptr;
  Args args_;
  uint64_t begin_ = 0; ///< Clock ticks (see Trace.cpp).
  bool on_ = false;
};

} // namespace quill::trace
