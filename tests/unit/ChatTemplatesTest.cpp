// Every chat template in <shared>/templates rendered by Quill and by Python's
// jinja2 (tests/chat/render_reference.py, HF's environment) over the
// conversations of tests/chat/conversations.json: the outputs must match byte
// for byte, and where Python fails (raise_exception, a TypeError) Quill must
// fail too, with Python's message inside its own.
#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaJson.h"
#include "tests/chat/ChatReference.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using quill::test::pythonJinjaUnavailable;
using quill::test::sharedTemplateNames;
using quill::test::sharedTemplatesDir;

/// A fixed clock for strftime_now on both sides: 2024-07-26 00:00:00 UTC.
constexpr std::time_t kNow = 1721952000;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path sourceDir() { return fs::path(QUILL_SOURCE_DIR); }

/// The render requests of tests/chat/conversations.json, in the reference
/// script's format.
Json cases() {
  Json spec = Json::parse(readFile(sourceDir() / "tests/chat/conversations.json"));
  Json out = Json::array();
  for (const auto &conv : spec["conversations"]) {
    Json c;
    c["name"] = conv["name"];
    c["messages"] = conv["messages"];
    c["tools"] = conv.value("use_tools", false) ? spec["tools"] : Json();
    c["add_generation_prompt"] = conv.value("add_generation_prompt", true);
    c["bos_token"] = "<s>";
    c["eos_token"] = "</s>";
    c["extra"] = conv.contains("extra") ? conv["extra"] : Json::object();
    c["now"] = kNow;
    out.push_back(c);
  }
  return out;
}

quill::jinja::Value toValue(const Json &j) {
  auto v = quill::jinja::valueFromJson(j.dump());
  EXPECT_TRUE(v) << v.message();
  return v ? *v : quill::jinja::Value();
}

class ChatTemplates : public testing::TestWithParam<std::string> {};

TEST_P(ChatTemplates, MatchesPythonJinja2) {
  if (std::string why = pythonJinjaUnavailable(); !why.empty())
    GTEST_SKIP() << why;
  fs::path path = sharedTemplatesDir() / GetParam();
  auto tmpl = quill::ChatTemplate::parse(readFile(path), GetParam());
  ASSERT_TRUE(tmpl) << tmpl.message();

  Json all = cases();
  Json request = {{"template", path.string()}, {"cases", all}};
  fs::path dir = fs::temp_directory_path() / ("quill-chat-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "request.json") << request.dump();
  std::string command = "python3 " + (sourceDir() / "tests/chat/render_reference.py").string() +
                        " < " + (dir / "request.json").string() + " > " +
                        (dir / "reply.json").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Json reply = Json::parse(readFile(dir / "reply.json"));
  fs::remove_all(dir);
  const Json &results = reply["results"];
  ASSERT_EQ(results.size(), all.size());

  int rendered = 0, failedBoth = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Json &c = all[i];
    SCOPED_TRACE("conversation " + c["name"].get<std::string>());
    quill::ChatRenderInput input;
    input.messages = toValue(c["messages"]);
    if (!c["tools"].is_null())
      input.tools = toValue(c["tools"]);
    input.addGenerationPrompt = c["add_generation_prompt"].get<bool>();
    input.bosToken = c["bos_token"].get<std::string>();
    input.eosToken = c["eos_token"].get<std::string>();
    for (const auto &[k, v] : c["extra"].items())
      input.extraVariables.emplace_back(k, toValue(v));
    input.now = kNow;
    auto quill = tmpl->render(input);
    const Json &python = results[i];
    if (python["ok"].get<bool>()) {
      ASSERT_TRUE(quill) << quill.message();
      EXPECT_EQ(*quill, python["text"].get<std::string>());
      ++rendered;
    } else {
      std::string error = python["error"].get<std::string>();
      ASSERT_FALSE(quill) << "Python failed (" << python["type"].get<std::string>() << ": " << error
                          << ") but Quill rendered:\n"
                          << *quill;
      EXPECT_NE(quill.message().find(error), std::string::npos)
          << "Quill: " << quill.message() << "\nPython: " << error;
      ++failedBoth;
    }
  }
  std::printf("%s: %d conversations rendered identically, %d failed on both sides\n",
              GetParam().c_str(), rendered, failedBoth);
}

INSTANTIATE_TEST_SUITE_P(Shared, ChatTemplates, testing::ValuesIn(sharedTemplateNames()),
                         [](const testing::TestParamInfo<std::string> &info) {
                           std::string name = info.param.substr(0, info.param.size() - 6);
                           for (char &c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ChatTemplates);

TEST(ChatTemplatesFolder, Present) {
  if (sharedTemplateNames().empty())
    GTEST_SKIP() << "no .jinja files in " << sharedTemplatesDir()
                 << " (the shared folder is absent)";
  SUCCEED();
}

} // namespace
