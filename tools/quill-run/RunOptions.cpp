// Parsing of quill-run's flags.
#include "RunOptions.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

namespace quill {

const char *runUsage() {
  return "usage: quill-run ARTIFACT [options]\n"
         "  -p, --prompt TEXT     prompt (default: empty, i.e. BOS only)\n"
         "  -n, --max-tokens N    new tokens to generate (default 256)\n"
         "  --temp T              temperature, 0 = greedy (default 1.0)\n"
         "  --top-k K             keep the K most likely tokens, 0 = off (default 0)\n"
         "  --top-p P             nucleus sampling mass in (0, 1] (default 0.9)\n"
         "  --min-p P             keep tokens with p >= P * p_max, in [0, 1], 0 = off\n"
         "                        (default 0)\n"
         "  --repeat-penalty R    divide (multiply) the positive (negative) logits of\n"
         "                        recent tokens by R > 0, 1 = off (default 1)\n"
         "  --repeat-last-n N     the penalties' window: the last N tokens, prompt\n"
         "                        included, 0 = penalties off (default 64)\n"
         "  --frequency-penalty F subtract F * (count in the window) (default 0)\n"
         "  --presence-penalty F  subtract F from every token in the window (default 0)\n"
         "  --logit-bias ID=V     add V (a number or -inf) to token ID's logit; repeatable\n"
         "  --samplers LIST       processor order, ',' or ';' separated (default\n"
         "                        penalties,top-k,top-p,min-p,temperature); logit bias\n"
         "                        runs first, the pick (greedy or dist) last\n"
         "  --seed S              random seed (default: from the clock)\n"
         "  --stop TEXT           end the output before TEXT; repeatable\n"
         "  --logprobs K          with --json: each token's log-probability and the K\n"
         "                        most likely alternatives\n"
         "  --logprobs-mode M     raw (the model's softmax, default) or processed (after\n"
         "                        the logit processors)\n"
         "  --threads N           worker threads (default: all cores)\n"
         "  --device cpu|cuda     where the kernels run (default cpu; cuda needs an\n"
         "                        artifact from quill-compile --target=cuda, the CUDA\n"
         "                        driver (libcuda.so.1, or $QUILL_CUDA_DRIVER) and a\n"
         "                        GPU, and runs one sequence)\n"
         "  --no-cuda-graphs      with --device cuda: launch every kernel every step\n"
         "                        instead of replaying the step as one CUDA graph\n"
         "                        (for A/B comparisons; names a kernel whose launch fails)\n"
         "  --json                print one JSON object instead of streaming text\n"
         "  --verbose             report the device, KV cache and sampler on stderr\n"
         "  --ignore-eos          generate all -n tokens: end tokens do not stop\n"
         "  --no-verify           skip checksumming the weights at load\n"
         "  --mmap                read the weights in place from the artifact's mapping\n"
         "                        (shared page cache, 4 KiB pages) instead of copying\n"
         "                        them into huge pages at load\n"
         "  --profile             time every kernel launch; print the time per kernel on\n"
         "                        stderr at the end (kernels then run one at a time)\n"
         "  --report DIR          with --profile: write DIR/index.html, the kernels as\n"
         "                        they ran on a roofline under this machine's probed\n"
         "                        bandwidth and fp32 and int8 peaks (kernels.json and\n"
         "                        roofline.svg beside it)\n"
         "  --trace FILE.json     write a Chrome trace (Perfetto, chrome://tracing): every\n"
         "                        step, kernel launch (and its pieces on the worker\n"
         "                        threads), sampling pass and scheduler decision\n"
         "  --sequential-kernels  run a step's independent kernels one after another\n"
         "                        instead of together (for A/B comparisons)\n"
         "  --no-step-team        split each large kernel across the threads on its own\n"
         "                        instead of one team of threads per step (A/B)\n"
         "  --bench               time prefill and decode, probe the machine's bandwidth\n"
         "                        and FMA peak, print both (with --json: as JSON)\n"
         "  --bench-prompt N      prompt tokens for --bench (default 128)\n"
         "  --bench-decode N      decode steps for --bench (default 128)\n"
         "  --batch-file FILE     run every line of FILE as a prompt, all together\n"
         "                        (continuous batching over the paged KV cache);\n"
         "                        results in input order, then the aggregate\n"
         "                        decode tokens/s and the peak KV bytes\n"
         "  --batch B[,B...]      most sequences in flight at once (default: the\n"
         "                        artifact's batch rows); with --bench, time batched\n"
         "                        decode of B sequences for each B\n"
         "  --kv-budget MB        size of the paged KV cache (default: enough for every\n"
         "                        sequence in flight to reach the full context, at\n"
         "                        most 1024)\n"
         "  --n-samples N         N independent continuations of the prompt, sharing its\n"
         "                        prefill and KV blocks; sample i draws from its own\n"
         "                        stream derived from --seed (sample 0 from --seed)\n"
         "  --beams N             beam search with N beams (1..64) over the model's\n"
         "                        log-probabilities after the logit processors (bias,\n"
         "                        penalties); beams share KV blocks; 1 is greedy search\n"
         "  --length-penalty F    beam score = logprob / length^F (default 1)\n"
         "  --early-stopping      stop once N hypotheses ended (default: once no beam\n"
         "                        can beat them)\n"
         "  --num-return K        the K best hypotheses (default 1; JSON \"sequences\")\n"
         "  --perplexity FILE     score the text in FILE instead of generating: tokenize\n"
         "                        it (with BOS), run it in sliding windows and print\n"
         "                        exp(mean NLL) +/- its standard error and the tokens\n"
         "                        scored; each window scores the tokens the previous\n"
         "                        one did not\n"
         "  --ppl-context N       window tokens, 2 .. the context (default: the\n"
         "                        context, at most the text's tokens)\n"
         "  --ppl-stride S        window step, 1 .. N (default N / 2)\n"
         "  --kl-divergence BASE  with --perplexity: also run BASE.qm (same tokenizer)\n"
         "                        and print KL(base || this) (mean, 99th percentile),\n"
         "                        top-1 agreement and BASE's perplexity\n"
         "  --messages FILE       reply to the conversation in FILE, rendered with the\n"
         "                        model's chat template: a JSON array of messages\n"
         "                        ({\"role\", \"content\"}), or an object {\"messages\",\n"
         "                        \"tools\", \"add_generation_prompt\" (default true),\n"
         "                        other template variables}; streamed, or with --json\n"
         "  --chat                chat on stdin/stdout: each line is a user turn, each\n"
         "                        reply is streamed; the conversation stays in the KV\n"
         "                        cache, so a turn prefills only its new tokens\n"
         "                        (--verbose reports how many); /exit or end of input\n"
         "                        leaves\n"
         "  --system TEXT         with --chat: the system message\n"
         "  --render-prompt       with --messages or --chat: print the rendered prompt\n"
         "                        exactly (no newline added) and stop; for --chat the\n"
         "                        system message alone, without the generation prompt\n"
         "  --chat-template FILE  Jinja chat template to use instead of the artifact's\n"
         "                        (quill-compile --info says whether a model has one)\n"
         "  -h, --help            this text\n"
         "environment:\n"
         "  QUILL_CHAT_NOW=SECS   chat templates' strftime_now reads this time (seconds\n"
         "                        since the epoch, UTC) instead of the clock, for\n"
         "                        reproducible prompts\n";
}

namespace {

template <typename T> ErrorOr<T> parseInteger(const std::string &flag, const char *text) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < std::numeric_limits<T>::min() ||
      value > std::numeric_limits<T>::max())
    return Status::error("invalid " + flag + " '" + text + "': expected an integer");
  return static_cast<T>(value);
}

ErrorOr<float> parseFloat(const std::string &flag, const char *text) {
  errno = 0;
  char *end = nullptr;
  float value = std::strtof(text, &end);
  if (errno == ERANGE || end == text || *end != '\0')
    return Status::error("invalid " + flag + " '" + text + "': expected a number");
  return value; // NaN passes here and is rejected by validate().
}

/// A flag of the sampling chain (--temp ... --seed) into `o`: whether
/// `arg` is one. `value` reads the flag's value.
ErrorOr<bool> parseSamplingFlag(const std::string &arg,
                                const std::function<ErrorOr<const char *>()> &value,
                                RunOptions &o) {
#define QUILL_TRY(var, expr)                                                                       \
  auto var = (expr);                                                                               \
  if (!var)                                                                                        \
    return var.status();
  if (arg == "--temp") {
    QUILL_TRY(v, value());
    QUILL_TRY(t, parseFloat(arg, *v));
    o.sampling.temperature = *t;
  } else if (arg == "--top-k") {
    QUILL_TRY(v, value());
    QUILL_TRY(k, parseInteger<int32_t>(arg, *v));
    o.sampling.topK = *k;
  } else if (arg == "--top-p") {
    QUILL_TRY(v, value());
    QUILL_TRY(p, parseFloat(arg, *v));
    o.sampling.topP = *p;
  } else if (arg == "--min-p") {
    QUILL_TRY(v, value());
    QUILL_TRY(p, parseFloat(arg, *v));
    o.sampling.minP = *p;
  } else if (arg == "--repeat-penalty") {
    QUILL_TRY(v, value());
    QUILL_TRY(r, parseFloat(arg, *v));
    o.sampling.repeatPenalty = *r;
  } else if (arg == "--repeat-last-n") {
    QUILL_TRY(v, value());
    QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
    o.sampling.repeatLastN = *n;
  } else if (arg == "--frequency-penalty") {
    QUILL_TRY(v, value());
    QUILL_TRY(f, parseFloat(arg, *v));
    o.sampling.frequencyPenalty = *f;
  } else if (arg == "--presence-penalty") {
    QUILL_TRY(v, value());
    QUILL_TRY(f, parseFloat(arg, *v));
    o.sampling.presencePenalty = *f;
  } else if (arg == "--logit-bias") {
    QUILL_TRY(v, value());
    QUILL_TRY(bias, parseLogitBias(*v));
    o.sampling.logitBias.push_back(*bias);
  } else if (arg == "--samplers") {
    QUILL_TRY(v, value());
    QUILL_TRY(order, parseProcessorOrder(*v));
    o.sampling.order = order.take();
  } else if (arg == "--stop") {
    QUILL_TRY(v, value());
    if (**v == '\0')
      return Status::error("invalid --stop '': a stop string must not be empty");
    o.stopStrings.push_back(*v);
  } else if (arg == "--logprobs") {
    QUILL_TRY(v, value());
    QUILL_TRY(k, parseInteger<int32_t>(arg, *v));
    o.sampling.logprobs = true;
    o.sampling.topLogprobs = *k;
  } else if (arg == "--logprobs-mode") {
    QUILL_TRY(v, value());
    std::string mode = *v;
    if (mode == "raw")
      o.sampling.logprobsMode = LogprobsMode::Raw;
    else if (mode == "processed")
      o.sampling.logprobsMode = LogprobsMode::Processed;
    else
      return Status::error("invalid --logprobs-mode '" + mode + "': expected raw or processed");
  } else if (arg == "--seed") {
    QUILL_TRY(v, value());
    QUILL_TRY(s, parseInteger<int64_t>(arg, *v));
    o.sampling.seed = static_cast<uint64_t>(*s);
    o.seedGiven = true;
  } else {
    return false;
  }
#undef QUILL_TRY
  return true;
}

/// The chat flags against each other and the other modes.
Status checkChatCombinations(const RunOptions &o, bool beamsGiven) {
  const bool chatMode = o.chat || !o.messagesFile.empty();
  if (o.chat && !o.messagesFile.empty())
    return Status::error("--chat and --messages exclude each other");
  if (o.renderPrompt && !chatMode)
    return Status::error("--render-prompt renders a conversation: add --messages FILE or --chat");
  if (o.systemPrompt && !o.chat)
    return Status::error("--system is the --chat system message: add --chat");
  if (!o.chatTemplateFile.empty() && !chatMode)
    return Status::error("--chat-template is for --messages and --chat");
  if (!chatMode)
    return Status::ok();
  const char *mode = o.chat ? "--chat" : "--messages";
  if (!o.prompt.empty() || !o.batchFile.empty() || o.bench || !o.perplexityFile.empty() ||
      beamsGiven || o.samples > 1)
    return Status::error(std::string(mode) +
                         " is a conversation: not with --prompt, --batch-file, --bench, "
                         "--perplexity, --beams or --n-samples");
  if (o.chat && o.json)
    return Status::error("--chat streams text: --json is for --messages");
  return Status::ok();
}

/// The checks across flags, once all are read; sets o.beamSearch.
Status checkCombinations(RunOptions &o, const BeamSearchOptions &beams, bool beamsGiven,
                         const std::string &beamKnob) {
  if (o.artifactPath.empty())
    return Status::error("no artifact given (see --help)");
  if (Status s = validate(o.sampling); !s)
    return s;
  if (!o.cudaGraphs && !o.cuda)
    return Status::error("--no-cuda-graphs is for --device cuda");
  if (o.cuda && (o.sequentialKernels || o.noStepTeam))
    return Status::error(
        std::string(o.sequentialKernels ? "--sequential-kernels" : "--no-step-team") +
        " schedules the CPU's threads: not with --device cuda");
  if (!o.reportDir.empty() && !o.profile)
    return Status::error("--report draws the profiled kernels: it needs --profile");
  if (!o.batchFile.empty() && !o.prompt.empty())
    return Status::error(
        "--batch-file and --prompt exclude each other: put the prompt in the file");
  if (!o.batchFile.empty() && o.bench)
    return Status::error("--batch-file and --bench exclude each other");
  if (o.batchSizes.size() > 1 && !o.bench)
    return Status::error("several --batch sizes are for --bench only");
  if (!beamKnob.empty() && !beamsGiven)
    return Status::error(beamKnob + " is a beam-search setting: add --beams N");
  if (beamsGiven) {
    if (beams.numReturn > beams.beams)
      return Status::error("invalid --num-return " + std::to_string(beams.numReturn) +
                           ": at most --beams (" + std::to_string(beams.beams) + ") hypotheses");
    if (o.samples > 1)
      return Status::error("--beams and --n-samples exclude each other");
    if (o.sampling.logprobs)
      return Status::error("--logprobs is not reported for --beams (see \"logprob\" of each "
                           "sequence instead)");
    o.beamSearch = beams;
  }
  if ((beamsGiven || o.samples > 1) && (!o.batchFile.empty() || o.bench))
    return Status::error(std::string(beamsGiven ? "--beams" : "--n-samples") +
                         " runs one prompt: not with --batch-file or --bench");
  if (o.perplexityFile.empty() && (o.pplContext || o.pplStride || !o.klBase.empty()))
    return Status::error(std::string(o.pplContext  ? "--ppl-context"
                                     : o.pplStride ? "--ppl-stride"
                                                   : "--kl-divergence") +
                         " is a --perplexity setting: add --perplexity FILE");
  if (!o.perplexityFile.empty() && (o.bench || !o.batchFile.empty() || beamsGiven ||
                                    o.samples > 1 || !o.prompt.empty() || o.sampling.logprobs))
    return Status::error("--perplexity scores a file: not with --prompt, --bench, --batch-file, "
                         "--beams, --n-samples or --logprobs");
  if (o.pplContext && o.pplStride > o.pplContext)
    return Status::error("invalid --ppl-stride " + std::to_string(o.pplStride) +
                         ": more than the window of " + std::to_string(o.pplContext));
  if (o.sampling.logprobs && !o.json)
    return Status::error("--logprobs is reported in the --json output only: add --json");
  return checkChatCombinations(o, beamsGiven);
}

} // namespace

ErrorOr<RunOptions> parseRunOptions(int argc, char **argv) {
  RunOptions o;
  BeamSearchOptions beams;
  bool beamsGiven = false;
  std::string beamKnob; // A beam-search flag given, for the error without --beams.
  o.sampling.topP = 0.9f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> ErrorOr<const char *> {
      if (i + 1 >= argc)
        return Status::error("missing value after " + arg);
      return static_cast<const char *>(argv[++i]);
    };
#define QUILL_TRY(var, expr)                                                                       \
  auto var = (expr);                                                                               \
  if (!var)                                                                                        \
    return var.status();
    QUILL_TRY(sampling, parseSamplingFlag(arg, value, o));
    if (*sampling)
      continue;
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "-p" || arg == "--prompt") {
      QUILL_TRY(v, value());
      o.prompt = *v;
    } else if (arg == "-n" || arg == "--max-tokens") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 0)
        return Status::error("invalid " + arg + " " + *v + ": must not be negative");
      o.maxNewTokens = *n;
    } else if (arg == "--threads") {
      QUILL_TRY(v, value());
      QUILL_TRY(t, parseInteger<int32_t>(arg, *v));
      if (*t < 1 || *t > 1024)
        return Status::error("invalid --threads " + std::string(*v) + ": must be in [1, 1024]");
      o.threads = *t;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--verbose") {
      o.verbose = true;
    } else if (arg == "--ignore-eos") {
      o.ignoreEos = true;
    } else if (arg == "--bench") {
      o.bench = true;
    } else if (arg == "--bench-prompt" || arg == "--bench-decode") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 1)
        return Status::error("invalid " + arg + " " + *v + ": must be at least 1");
      (arg == "--bench-prompt" ? o.benchPrompt : o.benchDecode) = *n;
      o.benchLengthsGiven = true;
    } else if (arg == "--batch-file") {
      QUILL_TRY(v, value());
      o.batchFile = *v;
    } else if (arg == "--batch") {
      QUILL_TRY(v, value());
      std::string list = *v;
      o.batchSizes.clear();
      for (size_t start = 0; start <= list.size();) {
        size_t comma = std::min(list.find(',', start), list.size());
        std::string item = list.substr(start, comma - start);
        QUILL_TRY(b, parseInteger<int32_t>(arg, item.c_str()));
        if (*b < 1)
          return Status::error("invalid --batch " + list + ": batch sizes must be at least 1");
        o.batchSizes.push_back(*b);
        start = comma + 1;
      }
    } else if (arg == "--kv-budget") {
      QUILL_TRY(v, value());
      QUILL_TRY(mb, parseInteger<int64_t>(arg, *v));
      if (*mb < 1 || *mb > (int64_t(1) << 30))
        return Status::error("invalid --kv-budget " + std::string(*v) +
                             ": expected a size in MB, at least 1");
      o.kvBudgetMB = *mb;
    } else if (arg == "--n-samples") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 1 || *n > kMaxBeams)
        return Status::error("invalid --n-samples " + std::string(*v) + ": must be in [1, " +
                             std::to_string(kMaxBeams) + "]");
      o.samples = *n;
    } else if (arg == "--beams") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 1 || *n > kMaxBeams)
        return Status::error("invalid --beams " + std::string(*v) + ": must be in [1, " +
                             std::to_string(kMaxBeams) + "]");
      beams.beams = *n;
      beamsGiven = true;
    } else if (arg == "--length-penalty") {
      QUILL_TRY(v, value());
      QUILL_TRY(f, parseFloat(arg, *v));
      if (!std::isfinite(*f))
        return Status::error("invalid --length-penalty " + std::string(*v) + ": must be finite");
      beams.lengthPenalty = *f;
      beamKnob = arg;
    } else if (arg == "--early-stopping") {
      beams.earlyStopping = true;
      beamKnob = arg;
    } else if (arg == "--num-return") {
      QUILL_TRY(v, value());
      QUILL_TRY(k, parseInteger<int32_t>(arg, *v));
      if (*k < 1)
        return Status::error("invalid --num-return " + std::string(*v) + ": must be at least 1");
      beams.numReturn = *k;
      beamKnob = arg;
    } else if (arg == "--device") {
      QUILL_TRY(v, value());
      std::string device = *v;
      if (device != "cpu" && device != "cuda")
        return Status::error("invalid --device '" + device + "': expected cpu or cuda");
      o.cuda = device == "cuda";
    } else if (arg == "--no-cuda-graphs") {
      o.cudaGraphs = false;
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg == "--trace") {
      QUILL_TRY(v, value());
      if (**v == '\0')
        return Status::error("invalid --trace '': expected a file");
      o.traceFile = *v;
    } else if (arg == "--report") {
      QUILL_TRY(v, value());
      if (**v == '\0')
        return Status::error("invalid --report '': expected a directory");
      o.reportDir = *v;
    } else if (arg == "--sequential-kernels") {
      o.sequentialKernels = true;
    } else if (arg == "--no-step-team") {
      o.noStepTeam = true;
    } else if (arg == "--perplexity" || arg == "--kl-divergence") {
      QUILL_TRY(v, value());
      if (**v == '\0')
        return Status::error("invalid " + arg + " '': expected a file");
      (arg == "--perplexity" ? o.perplexityFile : o.klBase) = *v;
    } else if (arg == "--ppl-context") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 2)
        return Status::error("invalid --ppl-context " + std::string(*v) +
                             ": a window needs at least 2 tokens");
      o.pplContext = *n;
    } else if (arg == "--ppl-stride") {
      QUILL_TRY(v, value());
      QUILL_TRY(n, parseInteger<int32_t>(arg, *v));
      if (*n < 1)
        return Status::error("invalid --ppl-stride " + std::string(*v) + ": must be at least 1");
      o.pplStride = *n;
    } else if (arg == "--messages" || arg == "--chat-template") {
      QUILL_TRY(v, value());
      if (**v == '\0')
        return Status::error("invalid " + arg + " '': expected a file");
      (arg == "--messages" ? o.messagesFile : o.chatTemplateFile) = *v;
    } else if (arg == "--chat") {
      o.chat = true;
    } else if (arg == "--system") {
      QUILL_TRY(v, value());
      o.systemPrompt = std::string(*v);
    } else if (arg == "--render-prompt") {
      o.renderPrompt = true;
    } else if (arg == "--no-verify") {
      o.verifyWeights = false;
    } else if (arg == "--mmap") {
      o.weightPages = WeightPages::Mapped;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return Status::error("unknown option '" + arg + "' (see --help)");
    } else if (o.artifactPath.empty()) {
      o.artifactPath = arg;
    } else {
      return Status::error("unexpected argument '" + arg + "': one artifact at a time");
    }
#undef QUILL_TRY
  }
  if (o.help)
    return o;
  if (Status s = checkCombinations(o, beams, beamsGiven, beamKnob); !s)
    return s;
  return o;
}

ErrorOr<std::pair<int32_t, int32_t>> benchLengths(const RunOptions &options, int32_t seqLen) {
  if (options.benchLengthsGiven) {
    if (int64_t(options.benchPrompt) + options.benchDecode > seqLen)
      return Status::error("--bench-prompt " + std::to_string(options.benchPrompt) +
                           " and --bench-decode " + std::to_string(options.benchDecode) +
                           " do not fit the context of " + std::to_string(seqLen) + " positions");
    return std::pair{options.benchPrompt, options.benchDecode};
  }
  // Short contexts shrink the default benchmark rather than fail it.
  int32_t prompt = std::min(options.benchPrompt, std::max(1, seqLen / 2));
  return std::pair{prompt, std::min(options.benchDecode, seqLen - prompt)};
}

} // namespace quill
