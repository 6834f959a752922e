// Parsing of quill-serve's flags.
#include "ServeOptions.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace quill::serve {

const char *serveUsage() {
  return "usage: quill-serve ARTIFACT [options]\n"
         "  --host ADDR           address to listen on (default 127.0.0.1)\n"
         "  --port N              TCP port, 0 = any free one (default 8080)\n"
         "  --threads N           kernel worker threads (default: all cores)\n"
         "  --batch B             most sequences decoding at once (default: the\n"
         "                        artifact's batch rows)\n"
         "  --kv-budget MB        KV cache size (default: every sequence can reach the\n"
         "                        full context, within 1 GiB)\n"
         "  --max-queue N         requests waiting for a slot before new ones get 429\n"
         "                        (default 128)\n"
         "  --api-key KEY         require 'Authorization: Bearer KEY' on /v1, /tokenize,\n"
         "                        /detokenize and /metrics\n"
         "  --timeout S           a request's wall-time limit in seconds, 0 = none\n"
         "                        (default 600); it then ends with finish_reason length\n"
         "  --chat-template FILE  Jinja chat template instead of the artifact's\n"
         "  --model-name NAME     the model id clients see (default: the artifact's\n"
         "                        file name without .qm)\n"
         "  --max-body-mb N       largest request body (default 8)\n"
         "  --verbose             log each request on stderr\n"
         "  --mmap                read the weights in place from the artifact's mapping\n"
         "                        instead of copying them into huge pages at load\n"
         "  -h, --help            this text\n";
}

namespace {

ErrorOr<int64_t> parseInteger(const std::string &flag, const char *text, int64_t low,
                              int64_t high) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high)
    return Status::error("invalid " + flag + " '" + text + "': expected an integer from " +
                         std::to_string(low) + " to " + std::to_string(high));
  return static_cast<int64_t>(value);
}

} // namespace

ErrorOr<ServeOptions> parseServeOptions(int argc, char **argv) {
  ServeOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> ErrorOr<const char *> {
      if (i + 1 >= argc)
        return Status::error(arg + " needs a value");
      return argv[++i];
    };
    auto integer = [&](int64_t low, int64_t high) -> ErrorOr<int64_t> {
      auto v = value();
      if (!v)
        return v.status();
      return parseInteger(arg, *v, low, high);
    };
    auto store = [&](auto &field, int64_t low, int64_t high) -> Status {
      auto v = integer(low, high);
      if (!v)
        return v.status();
      field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
      return Status::ok();
    };
    auto text = [&](std::string &field) -> Status {
      auto v = value();
      if (!v)
        return v.status();
      field = *v;
      return Status::ok();
    };
    Status s = Status::ok();
    if (arg == "-h" || arg == "--help")
      o.help = true;
    else if (arg == "--verbose")
      o.verbose = true;
    else if (arg == "--mmap")
      o.mmapWeights = true;
    else if (arg == "--host")
      s = text(o.host);
    else if (arg == "--port")
      s = store(o.port, 0, 65535);
    else if (arg == "--threads")
      s = store(o.threads, 1, 1024);
    else if (arg == "--batch")
      s = store(o.batch, 1, 1024);
    else if (arg == "--kv-budget")
      s = store(o.kvBudgetMiB, 1, int64_t(1) << 20);
    else if (arg == "--max-queue")
      s = store(o.maxQueue, 1, 1 << 20);
    else if (arg == "--max-body-mb") {
      s = store(o.maxBodyBytes, 1, 1024);
      o.maxBodyBytes <<= 20;
    } else if (arg == "--api-key")
      s = text(o.apiKey);
    else if (arg == "--chat-template")
      s = text(o.chatTemplateFile);
    else if (arg == "--model-name")
      s = text(o.modelName);
    else if (arg == "--timeout") {
      auto v = value();
      if (!v)
        return v.status();
      char *end = nullptr;
      errno = 0;
      double t = std::strtod(*v, &end);
      if (errno != 0 || end == *v || *end != '\0' || !std::isfinite(t) || t < 0 || t > 1e7)
        return Status::error(std::string("invalid --timeout '") + *v +
                             "': expected seconds from 0 to 10000000");
      o.timeoutSeconds = t;
    } else if (!arg.empty() && arg[0] == '-')
      return Status::error("unknown flag " + arg + " (see --help)");
    else if (o.artifactPath.empty())
      o.artifactPath = arg;
    else
      return Status::error("unexpected argument '" + arg + "': one artifact only");
    if (!s)
      return s;
  }
  if (o.help)
    return o;
  if (o.artifactPath.empty())
    return Status::error("no artifact given (usage: quill-serve ARTIFACT [options]; see --help)");
  if (o.modelName.empty()) {
    std::string name = o.artifactPath.substr(o.artifactPath.find_last_of('/') + 1);
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".qm") == 0)
      name.resize(name.size() - 3);
    o.modelName = name;
  }
  return o;
}

} // namespace quill::serve
