// quill-run's text is well-formed UTF-8 whatever bytes the tokens hold: a
// random-weight model samples byte tokens (<0xNN>) in any order, so its raw
// output is full of overlong forms, stray continuations and characters cut
// short. Python's json module and its UTF-8 decoder are the independent
// judges: json.load must accept the output, and the text must equal the
// logprobs entries' bytes decoded with errors="replace" (U+FFFD per maximal
// subpart, Unicode's recommendation).
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <fstream>

namespace quill::test {
namespace {

/// A random-weight model over a tokenizer with all 256 byte tokens.
const std::string &randomArtifact() {
  static std::string path =
      compileSynthetic(llamaShape(64, 160, 2, 4, 2, 512, 256), "utf8", "", /*seed=*/99);
  return path;
}

bool havePython() { return run("python3 -c 'import json'").exitCode == 0; }

/// The Python check of quill-run's JSON in the file argv[1] (run() gives
/// commands /dev/null as stdin); prints "ok N M"
/// (N replacement characters, M bytes of non-ASCII input) or why not.
const char *kCheckJson = R"(
import json, sys
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8"))  # strict: ill-formed UTF-8 raises
tokens = b"".join(bytes(e["bytes"]) for e in doc["logprobs"])
for e in doc["logprobs"]:
    assert all(0 <= b < 256 for b in e["bytes"]) and all("bytes" in t for t in e["top"])
expected = tokens.decode("utf-8", errors="replace")
assert doc["text"] == expected, (doc["text"], expected)
print("ok", expected.count("\ufffd"), sum(b >= 128 for b in tokens))
)";

std::string writeScript(const std::string &name, const std::string &text) {
  std::string path = tempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(JsonUtf8, TextIsWellFormedAndEqualsTheTokensBytes) {
  if (!havePython())
    GTEST_SKIP() << "python3 is absent";
  ASSERT_FALSE(randomArtifact().empty());
  std::string script = writeScript("check-json.py", kCheckJson);
  int replaced = 0, nonAscii = 0;
  for (int seed : {1, 2, 3, 4}) {
    std::string command = quote(tool("quill-run")) + " " + quote(randomArtifact()) +
                          " --json --logprobs 2 -n 200 --temp 1.5 --top-p 1 --seed " +
                          std::to_string(seed);
    std::string output = tempDir() + "/out.json";
    CommandResult generated = run(command + " > " + quote(output));
    ASSERT_EQ(generated.exitCode, 0) << generated.err;
    CommandResult r = run("python3 " + quote(script) + " " + quote(output));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ASSERT_EQ(r.out.rfind("ok ", 0), 0u) << r.out;
    int n = 0, m = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "ok %d %d", &n, &m), 2) << r.out;
    replaced += n;
    nonAscii += m;
  }
  // The check is only as good as its input: raw bytes were sampled, and
  // some were ill-formed.
  EXPECT_GT(nonAscii, 50);
  EXPECT_GT(replaced, 0);
}

TEST(JsonUtf8, StreamedTextIsTheJsonText) {
  if (!havePython())
    GTEST_SKIP() << "python3 is absent";
  ASSERT_FALSE(randomArtifact().empty());
  std::string flags = " -n 200 --temp 1.5 --top-p 1 --seed 5";
  std::string base = quote(tool("quill-run")) + " " + quote(randomArtifact()) + flags;
  std::string streamed = tempDir() + "/streamed.txt";
  ASSERT_EQ(run(base + " > " + quote(streamed)).exitCode, 0);
  // Strictly decodable, and the JSON's text plus the final newline.
  std::string json = tempDir() + "/streamed.json";
  ASSERT_EQ(run(base + " --json > " + quote(json)).exitCode, 0);
  std::string script = writeScript("check-stream.py", R"(
import json, sys
streamed = open(sys.argv[1], "rb").read().decode("utf-8")
doc = json.loads(open(sys.argv[2], "rb").read().decode("utf-8"))
assert streamed == doc["text"] + "\n", (streamed, doc["text"])
print("ok")
)");
  CommandResult r = run("python3 " + quote(script) + " " + quote(streamed) + " " + quote(json));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n") << r.err;
}

} // namespace
} // namespace quill::test
