// quill-run's chat modes end to end. A synthetic GGUF whose byte-level
// tokenizer has ChatML's special tokens as control tokens and whose metadata
// holds Qwen2.5's chat template is compiled by the real quill-compile; the
// prompts quill-run renders are compared with Python's jinja2
// (tests/chat/render_reference.py), their ids with ids worked out by hand,
// and a --chat session through a pipe with --messages runs of the same
// conversation.
#include "TestSupport.h"
#include "tests/chat/ChatReference.h"
#include "tests/unit/ModelWriters.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <filesystem>

namespace quill::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using Ids = std::vector<int32_t>;

/// strftime_now's clock on both sides (QUILL_CHAT_NOW): 2024-07-26 UTC.
constexpr std::time_t kNow = 1721952000;

// The vocabulary: ids 0..127 are the ASCII bytes, then the special tokens
// (all control tokens, so that every token's text reads back as itself);
// bytes from 0x80 fall back to <unk>.
constexpr int32_t kEndOfText = 128, kImStart = 129, kImEnd = 130, kUnk = 131, kVocab = 132;
const char *const kSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"};

const char *const kQwenTemplate = "Qwen-Qwen2.5-7B-Instruct.jinja";

/// The byte-level tokenizer above, and Qwen2.5's template when asked for.
void addChatTokenizer(GgufWriter &w, bool withTemplate) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 128; ++b) {
    tokens.push_back(gpt2Printable(std::string(1, char(b))));
    types.push_back(1);
  }
  for (const char *special : kSpecials) {
    tokens.push_back(special);
    types.push_back(3);
  }
  w.addString("tokenizer.ggml.model", "gpt2");
  w.addString("tokenizer.ggml.pre", "qwen2");
  w.addStrings("tokenizer.ggml.tokens", tokens);
  w.addI32s("tokenizer.ggml.token_type", types);
  w.addStrings("tokenizer.ggml.merges", {});
  w.addU32("tokenizer.ggml.bos_token_id", kEndOfText);
  w.addU32("tokenizer.ggml.eos_token_id", kImEnd);
  w.addU32("tokenizer.ggml.unknown_token_id", kUnk);
  if (withTemplate)
    w.addString("tokenizer.chat_template",
                readFile(sharedTemplatesDir().string() + "/" + kQwenTemplate));
}

/// The GGUF compiled with its own tokenizer (and `flags`) into DIR/NAME.qm.
std::string compileChatModel(const std::string &name, bool withTemplate,
                             const std::string &flags = "") {
  ModelConfig c = llamaShape(64, 128, 2, 4, 2, kVocab, 512);
  c.bosId = kEndOfText;
  c.eosId = kImEnd;
  std::string model = tempDir() + "/" + name + ".gguf";
  writeBytes(model,
             llamaGgufBytes(c, syntheticTensors(c, 11, [](float v) { return v; }), "F32", 3,
                            nullptr, [&](GgufWriter &w) { addChatTokenizer(w, withTemplate); }));
  std::string out = tempDir() + "/" + name + ".qm";
  CommandResult r =
      run(quote(tool("quill-compile")) + " " + quote(model) + " -o " + quote(out) + " " + flags);
  EXPECT_EQ(r.exitCode, 0) << "quill-compile failed: " << r.err;
  return r.exitCode == 0 ? out : "";
}

/// The model with Qwen2.5's template, compiled once.
const std::string &chatModel() {
  static const std::string path = compileChatModel("chatml", true);
  return path;
}

/// quill-run on `artifact` with the fixed clock.
CommandResult quillRun(const std::string &artifact, const std::string &flags) {
  return run("QUILL_CHAT_NOW=" + std::to_string(kNow) + " " + quote(tool("quill-run")) + " " +
             quote(artifact) + " " + flags);
}

std::string writeJson(const std::string &name, const Json &json) {
  std::string path = tempDir() + "/" + name + ".json";
  writeText(path, json.dump());
  return path;
}

/// The conversations the template tests share, as requests: {"messages",
/// "tools", "add_generation_prompt", template variables}.
std::vector<std::pair<std::string, Json>> conversations() {
  Json spec =
      Json::parse(readFile(std::string(QUILL_SOURCE_DIR) + "/tests/chat/conversations.json"));
  std::vector<std::pair<std::string, Json>> out;
  for (const auto &conv : spec["conversations"]) {
    Json request;
    request["messages"] = conv["messages"];
    if (conv.value("use_tools", false))
      request["tools"] = spec["tools"];
    request["add_generation_prompt"] = conv.value("add_generation_prompt", true);
    if (conv.contains("extra"))
      for (const auto &[k, v] : conv["extra"].items())
        request[k] = v;
    out.emplace_back(conv["name"].get<std::string>(), request);
  }
  return out;
}

/// Python's renders of `templateName` over `requests`, with the model's
/// special tokens: {"ok", "text"} or {"ok": false, "error"} each.
Json referenceRenders(const std::string &templateName, const std::vector<Json> &requests) {
  Json cases = Json::array();
  for (const Json &request : requests) {
    Json c;
    c["messages"] = request["messages"];
    c["tools"] = request.contains("tools") ? request["tools"] : Json();
    c["add_generation_prompt"] = request["add_generation_prompt"];
    c["bos_token"] = kSpecials[kEndOfText - 128];
    c["eos_token"] = kSpecials[kImEnd - 128];
    Json extra = Json::object();
    for (const auto &[k, v] : request.items())
      if (k != "messages" && k != "tools" && k != "add_generation_prompt")
        extra[k] = v;
    c["extra"] = extra;
    c["now"] = kNow;
    cases.push_back(c);
  }
  Json query{{"template", sharedTemplatesDir().string() + "/" + templateName}, {"cases", cases}};
  std::string in = writeJson("reference-query", query);
  // In braces: run() sends /dev/null to the command's stdin.
  CommandResult r =
      run("{ python3 " + quote(std::string(QUILL_SOURCE_DIR) + "/tests/chat/render_reference.py") +
          " < " + quote(in) + "; }");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return r.exitCode == 0 ? Json::parse(r.out)["results"] : Json::array();
}

/// The ids of a rendered prompt worked out by hand: each special token's
/// text is its id, every other (ASCII) byte is its own id, as the
/// vocabulary has no merges.
Ids handTokenized(const std::string &text) {
  Ids ids;
  for (size_t i = 0; i < text.size();) {
    bool special = false;
    for (int32_t k = 0; k < 4 && !special; ++k) {
      std::string piece = kSpecials[k];
      if (text.compare(i, piece.size(), piece) == 0) {
        ids.push_back(128 + k);
        i += piece.size();
        special = true;
      }
    }
    if (!special) {
      const unsigned char byte = static_cast<unsigned char>(text[i++]);
      ids.push_back(byte < 128 ? int32_t(byte) : kUnk);
    }
  }
  return ids;
}

/// "chat turn N: prefilled P tokens, reused R" lines of --verbose.
std::vector<std::pair<int, int>> turnReports(const std::string &err) {
  std::vector<std::pair<int, int>> turns;
  size_t at = 0;
  while ((at = err.find("chat turn ", at)) != std::string::npos) {
    int turn = 0, prefilled = 0, reused = 0;
    if (std::sscanf(err.c_str() + at, "chat turn %d: prefilled %d tokens, reused %d", &turn,
                    &prefilled, &reused) == 3)
      turns.emplace_back(prefilled, reused);
    ++at;
  }
  return turns;
}

Json userTurn(const std::string &content) { return {{"role", "user"}, {"content", content}}; }

TEST(ChatTemplateArtifact, TravelsFromGgufAndCanBeOverridden) {
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  // --info names the template's source.
  CommandResult info =
      run(quote(tool("quill-compile")) + " " + quote(tempDir() + "/chatml.gguf") + " --info");
  ASSERT_EQ(info.exitCode, 0) << info.err;
  const size_t bytes = readFile(sharedTemplatesDir().string() + "/" + kQwenTemplate).size();
  EXPECT_NE(info.out.find("chat template: " + std::to_string(bytes) + " bytes, from "),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("tokenizer.chat_template"), std::string::npos) << info.out;
  const std::string other =
      sharedTemplatesDir().string() + "/mistralai-Mistral-Nemo-Instruct-2407.jinja";
  CommandResult overridden =
      run(quote(tool("quill-compile")) + " " + quote(tempDir() + "/chatml.gguf") +
          " --info --chat-template " + quote(other));
  EXPECT_NE(overridden.out.find(other + " (--chat-template)"), std::string::npos) << overridden.out;

  // The artifact's template renders what Python renders; an override
  // compiled in replaces it.
  std::string messages = writeJson("one-user", Json::array({userTurn("Hi there")}));
  if (std::string why = pythonJinjaUnavailable(); !why.empty())
    GTEST_SKIP() << why;
  Json request{{"messages", Json::array({userTurn("Hi there")})}, {"add_generation_prompt", true}};
  Json qwen = referenceRenders(kQwenTemplate, {request});
  ASSERT_EQ(qwen.size(), 1u);
  CommandResult own = quillRun(artifact, "--render-prompt --messages " + quote(messages));
  ASSERT_EQ(own.exitCode, 0) << own.err;
  EXPECT_EQ(own.out, qwen[0]["text"].get<std::string>());
  // --chat's opening: the system message, no generation prompt.
  Json opening{{"messages", Json::array({{{"role", "system"}, {"content", "Be brief."}}})},
               {"add_generation_prompt", false}};
  Json system = referenceRenders(kQwenTemplate, {opening});
  CommandResult chat = quillRun(artifact, "--chat --render-prompt --system 'Be brief.'");
  ASSERT_EQ(chat.exitCode, 0) << chat.err;
  EXPECT_EQ(chat.out, system[0]["text"].get<std::string>());
  EXPECT_EQ(chat.out, "<|im_start|>system\nBe brief.<|im_end|>\n");

  std::string mistral = compileChatModel("chatml-mistral", true, "--chat-template " + quote(other));
  ASSERT_FALSE(mistral.empty());
  Json expected = referenceRenders("mistralai-Mistral-Nemo-Instruct-2407.jinja", {request});
  CommandResult r = quillRun(mistral, "--render-prompt --messages " + quote(messages));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, expected[0]["text"].get<std::string>());
}

TEST(ChatRenderPrompt, EverySharedTemplateMatchesJinja2ByteForByte) {
  if (std::string why = pythonJinjaUnavailable(); !why.empty())
    GTEST_SKIP() << why;
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  std::vector<std::string> templates = sharedTemplateNames();
  ASSERT_FALSE(templates.empty()) << "no templates in " << sharedTemplatesDir();
  auto convs = conversations();
  std::vector<Json> requests;
  std::vector<std::string> files;
  for (const auto &[name, request] : convs) {
    requests.push_back(request);
    files.push_back(writeJson("conv-" + name, request));
  }
  int compared = 0, failures = 0;
  for (const std::string &t : templates) {
    Json expected = referenceRenders(t, requests);
    ASSERT_EQ(expected.size(), requests.size()) << t;
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE(t + " / " + convs[i].first);
      CommandResult r =
          quillRun(artifact, "--render-prompt --messages " + quote(files[i]) + " --chat-template " +
                                 quote(sharedTemplatesDir().string() + "/" + t));
      if (expected[i]["ok"].get<bool>()) {
        ASSERT_EQ(r.exitCode, 0) << r.err;
        EXPECT_EQ(r.out, expected[i]["text"].get<std::string>());
        ++compared;
      } else {
        // Python's message (raise_exception's, a TypeError's) in one line.
        expectCleanFailure(r, expected[i]["error"].get<std::string>());
        ++failures;
      }
    }
  }
  std::printf("compared %d renders and %d failures over %zu templates\n", compared, failures,
              templates.size());
  EXPECT_GT(compared, int(templates.size()) * 10);
}

TEST(ChatPromptIds, SpecialTokensStayWhole) {
  if (std::string why = pythonJinjaUnavailable(); !why.empty())
    GTEST_SKIP() << why;
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  Json request{{"messages", Json::array({{{"role", "system"}, {"content", "Be brief."}},
                                         userTurn("What is 2+2?")})},
               {"add_generation_prompt", true}};
  Json expected = referenceRenders(kQwenTemplate, {request});
  ASSERT_EQ(expected.size(), 1u);
  const std::string text = expected[0]["text"].get<std::string>();
  ASSERT_EQ(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is "
                  "2+2?<|im_end|>\n<|im_start|>assistant\n");
  CommandResult r = quillRun(artifact, "--messages " + quote(writeJson("ids", request)) +
                                           " --json -n 0 --temp 0");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  Json result = Json::parse(r.out);
  Ids ids = result["prompt_tokens"].get<Ids>();
  EXPECT_EQ(ids, handTokenized(text));
  // No BOS was added: the template writes none for Qwen.
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), kImStart);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kImStart), 3);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kImEnd), 2);
}

TEST(ChatSession, SecondTurnPrefillsOnlyItsNewTokensAndMatchesMessages) {
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  const std::string sampling = " --temp 0 -n 12 --json";
  const std::string first = "Hello, who are you?", second = "Tell me more.";
  // Turn 1 and turn 2 as one-shot --messages runs.
  Json one = Json::array({userTurn(first)});
  CommandResult r1 = quillRun(artifact, "--messages " + quote(writeJson("turn1", one)) + sampling);
  ASSERT_EQ(r1.exitCode, 0) << r1.err;
  Json reply1 = Json::parse(r1.out);
  const std::string text1 = reply1["text"].get<std::string>();
  Json two = one;
  two.push_back({{"role", "assistant"}, {"content", text1}});
  two.push_back(userTurn(second));
  CommandResult r2 = quillRun(artifact, "--messages " + quote(writeJson("turn2", two)) + sampling);
  ASSERT_EQ(r2.exitCode, 0) << r2.err;
  Json reply2 = Json::parse(r2.out);
  const std::string text2 = reply2["text"].get<std::string>();

  // The same two turns through a pipe.
  std::string input = tempDir() + "/chat-input.txt";
  writeText(input, first + "\n" + second + "\n");
  CommandResult chat =
      run("{ cat " + quote(input) + " | QUILL_CHAT_NOW=" + std::to_string(kNow) + " " +
          quote(tool("quill-run")) + " " + quote(artifact) + " --chat --verbose --temp 0 -n 12; }");
  ASSERT_EQ(chat.exitCode, 0) << chat.err;
  EXPECT_EQ(chat.out, text1 + "\n" + text2 + "\n");

  // Turn 2 reuses the cache: the first prompt and the reply tokens fed
  // back (all of them after an end token, all but the last after -n).
  Ids prompt1 = reply1["prompt_tokens"].get<Ids>();
  Ids prompt2 = reply2["prompt_tokens"].get<Ids>();
  Ids cached = prompt1;
  Ids tokens1 = reply1["tokens"].get<Ids>();
  const bool fedAll = reply1["stop_reason"] == "eos";
  cached.insert(cached.end(), tokens1.begin(), tokens1.end() - (fedAll ? 0 : 1));
  // Every token's text reads back as itself, so the cache is a prefix of
  // the second prompt.
  ASSERT_LE(cached.size(), prompt2.size());
  EXPECT_TRUE(std::equal(cached.begin(), cached.end(), prompt2.begin()));
  auto turns = turnReports(chat.err);
  ASSERT_EQ(turns.size(), 2u) << chat.err;
  EXPECT_EQ(turns[0], std::make_pair(int(prompt1.size()), 0));
  EXPECT_EQ(turns[1], std::make_pair(int(prompt2.size() - cached.size()), int(cached.size())));
  // A reply of some tokens, so that reuse covers more than the first prompt.
  EXPECT_FALSE(tokens1.empty());
  std::printf("turn 1: %zu prompt tokens, %zu reply tokens (%s); turn 2: prefilled %d, reused %d\n",
              prompt1.size(), tokens1.size(), reply1["stop_reason"].get<std::string>().c_str(),
              turns[1].first, turns[1].second);
}

TEST(ChatSession, ExitAndEndOfInputLeaveCleanly) {
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  std::string input = tempDir() + "/exit.txt";
  writeText(input, "/exit\nnever answered\n");
  CommandResult r = run("{ cat " + quote(input) + " | " + quote(tool("quill-run")) + " " +
                        quote(artifact) + " --chat --verbose; }");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find("chat turn"), std::string::npos) << r.err;
  // Stdin at its end at once (</dev/null): nothing to answer.
  CommandResult eof = quillRun(artifact, "--chat");
  EXPECT_EQ(eof.exitCode, 0) << eof.err;
  EXPECT_EQ(eof.out, "");
}

TEST(ChatSession, AFullContextEndsTheSessionInOneLine) {
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  std::string input = tempDir() + "/long.txt";
  writeText(input, "Go on forever.\nAnd again.\n");
  CommandResult r = run("{ cat " + quote(input) + " | " + quote(tool("quill-run")) + " " +
                        quote(artifact) + " --chat --ignore-eos -n 100000 --temp 0; }");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("context of 512 positions is full"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_FALSE(r.out.empty());
}

TEST(ChatBadInput, EveryProblemIsOneLine) {
  const std::string &artifact = chatModel();
  ASSERT_FALSE(artifact.empty());
  std::string messages = writeJson("bad-input", Json::array({userTurn("hi")}));
  auto withTemplate = [&](const std::string &name, const std::string &source) {
    std::string path = tempDir() + "/" + name + ".jinja";
    writeText(path, source);
    return quillRun(artifact, "--messages " + quote(messages) + " --chat-template " + quote(path));
  };
  // Syntax: jinja2 says "unexpected '}'" at line 2 ("{% if %}" has no test).
  expectCleanFailure(withTemplate("syntax", "ok\n  {% if %}{% endif %}"), "line 2, column");
  expectCleanFailure(withTemplate("filter", "{{ messages | no_such_filter }}"),
                     "no filter named 'no_such_filter'");
  // Mistral's template refuses two user turns in a row.
  Json twoUsers = Json::array({userTurn("a"), userTurn("b")});
  expectCleanFailure(quillRun(artifact, "--messages " + quote(writeJson("two-users", twoUsers)) +
                                            " --chat-template " +
                                            quote(sharedTemplatesDir().string() +
                                                  "/mistralai-Mistral-Nemo-Instruct-2407.jinja")),
                     "conversation roles must alternate user/assistant/user/assistant/...");
  std::string broken = tempDir() + "/broken.json";
  writeText(broken, "[{\"role\": \"user\", \"content\": \"hi\"");
  expectCleanFailure(quillRun(artifact, "--messages " + quote(broken)),
                     "broken.json: messages JSON");
  expectCleanFailure(
      quillRun(artifact,
               "--messages " + quote(writeJson("no-role", Json::array({{{"content", "x"}}})))),
      "\"role\" must be a string");
  // quill-compile checks a --chat-template it embeds.
  std::string bad = tempDir() + "/bad-compile.jinja";
  writeText(bad, "{{ messages[0] ");
  expectCleanFailure(run(quote(tool("quill-compile")) + " " + quote(tempDir() + "/chatml.gguf") +
                         " -o " + quote(tempDir() + "/never.qm") + " --chat-template " +
                         quote(bad)),
                     "bad-compile.jinja: line 1, column");
  // A model without a template, and no --chat-template.
  std::string bare = compileChatModel("chatml-bare", false);
  ASSERT_FALSE(bare.empty());
  expectCleanFailure(quillRun(bare, "--messages " + quote(messages)), "has no chat template");
  expectCleanFailure(quillRun(bare, "--chat"), "has no chat template");
  // A prompt longer than the context.
  Json longer = Json::array({userTurn(std::string(600, 'x'))});
  expectCleanFailure(quillRun(artifact, "--messages " + quote(writeJson("long", longer))),
                     "tokens but the model's context holds 512");
  // Flags that do not go together.
  expectCleanFailure(quillRun(artifact, "--render-prompt"), "--render-prompt");
  expectCleanFailure(quillRun(artifact, "--chat --json"), "--json");
  expectCleanFailure(quillRun(artifact, "--system x"), "--system");
  expectCleanFailure(quillRun(artifact, "--chat -p hi"), "--prompt");
  // QUILL_CHAT_NOW must be a number.
  expectCleanFailure(run("QUILL_CHAT_NOW=soon " + quote(tool("quill-run")) + " " + quote(artifact) +
                         " --render-prompt --messages " + quote(messages)),
                     "QUILL_CHAT_NOW");
}

} // namespace
} // namespace quill::test
