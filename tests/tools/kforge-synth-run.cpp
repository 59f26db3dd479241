// kforge-synth-run — writes a synthetic run directory for testing reports at scale.
//
//   kforge-synth-run --out DIR [--tasks 500] [--samples 4] [--turns 5] [--seed 1] [--no-bench]
//                    [--cpu] [--stop-on-pass] [--task-offset 0] [--model NAME]
//
// The run looks like one `kforge run` wrote (manifest.json, attempts.jsonl, and per attempt
// attempts/<task>/<sample>/<turn>/ with prompt.md, response.txt, kernel.cu (kernel.cpp with
// --cpu), result.json and, for compile errors, build.log), but every value is drawn from a
// seeded generator: nothing here was measured. Every file and record says so ("synthetic").
// Episodes repair their kernels turn by turn (an edit of a few lines per turn), outcomes move
// from compile errors and mismatches towards passes, passes carry speedups (log-normal, with
// 95% intervals), roofline fractions against made-up peaks (not with --cpu), profile findings,
// phase times and tokens. A few turns fail at the endpoint (llm_error) and are asked again, as
// `--resume` does. --no-bench leaves passes untimed. --task-offset shifts the task ids (two
// runs with partly different task sets). Default: 500 x 4 x 5 = 10000 attempts.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kforge/common/util.hpp"
#include "kforge/runs/attempt.hpp"
#include "kforge/runs/run_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

struct Options {
  fs::path out;
  int tasks = 500, samples = 4, turns = 5, task_offset = 0;
  unsigned seed = 1;
  bool bench = true, cpu = false, stop_on_pass = false;
  std::string model = "synthetic-model";
};

const std::vector<std::string> kCategories{"activation", "loss",    "matmul", "conv",      "normalization",
                                           "reduction",  "pooling", "fusion", "attention", "math"};

struct Gen {
  std::mt19937_64 rng;
  double uni() { return std::uniform_real_distribution<double>(0, 1)(rng); }
  int pick(int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng)); }
  double normal(double m, double s) { return std::normal_distribution<double>(m, s)(rng); }
  std::string word() {
    static const std::vector<std::string> w{"acc", "val", "tmp", "idx",  "lane", "tile", "row",
                                            "col", "sum", "off", "base", "vec",  "mask", "part",
                                            "blk", "x",   "y",   "h",    "w",    "k"};
    return w[static_cast<std::size_t>(pick(static_cast<int>(w.size())))] + std::to_string(pick(9));
  }
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error(p.string() + ": cannot write");
}

/// A kernel body of ~70-110 lines: shared boilerplate, sample-specific body lines.
std::vector<std::string> base_kernel(Gen& g, const std::string& task, bool cpu) {
  std::vector<std::string> k;
  k.push_back("// synthetic kernel for " + task + " (kforge-synth-run; not a real candidate)");
  k.push_back(cpu ? "#include <cstdint>" : "#include <cuda_runtime.h>");
  k.push_back("#include \"kforge/kernel_abi.h\"");
  k.push_back("");
  const int block = 64 << g.pick(4), unroll = 1 << g.pick(3);
  k.push_back("constexpr int kBlock = " + std::to_string(block) + ";");
  k.push_back("constexpr int kUnroll = " + std::to_string(unroll) + ";");
  k.push_back("");
  k.push_back(std::string(cpu ? "static void" : "__global__ void") + " body_" + g.word() +
              "(const float* __restrict__ in, float* __restrict__ out, int64_t n) {");
  const int body = 50 + g.pick(40);
  for (int i = 0; i < body; ++i) {
    switch (g.pick(6)) {
      case 0:
        k.push_back("  float " + g.word() + " = in[" + g.word() + " + " + std::to_string(g.pick(64)) + "];");
        break;
      case 1:
        k.push_back("  " + g.word() + " += " + g.word() + " * " + std::to_string(g.uni()).substr(0, 6) +
                    "f;");
        break;
      case 2:
        k.push_back("  for (int " + g.word() + " = 0; " + g.word() + " < kUnroll; ++" + g.word() + ") {");
        k.push_back("  }");
        break;
      case 3:
        k.push_back("  if (" + g.word() + " < n) out[" + g.word() + "] = " + g.word() + ";");
        break;
      case 4:
        k.push_back("  // " + g.word() + ": keep the loads coalesced");
        break;
      default:
        k.push_back("  const int64_t " + g.word() + " = " + g.word() + " * kBlock + " + g.word() + ";");
        break;
    }
  }
  k.push_back("}");
  k.push_back("");
  k.push_back(
      "extern \"C\" int kf_forward(const KfTensor* inputs, int n_inputs, KfTensor* outputs, int n_outputs) "
      "{");
  k.push_back("  (void)n_inputs; (void)n_outputs;");
  k.push_back("  const int64_t n = inputs[0].numel;");
  k.push_back(cpu ? "  body(inputs[0].data, outputs[0].data, n);"
                  : "  body<<<(n + kBlock - 1) / kBlock, kBlock>>>(inputs[0].data, outputs[0].data, n);");
  k.push_back("  return 0;");
  k.push_back("}");
  return k;
}

/// One turn's repair: a few lines changed, added or removed.
void edit(Gen& g, std::vector<std::string>& k) {
  const int edits = 2 + g.pick(8);
  for (int e = 0; e < edits && k.size() > 20; ++e) {
    std::size_t i = 8 + static_cast<std::size_t>(g.pick(static_cast<int>(k.size()) - 16));
    switch (g.pick(3)) {
      case 0:
        k[i] = "  " + g.word() + " = fmaxf(" + g.word() + ", 0.0f);  // fix turn edit";
        break;
      case 1:
        k.insert(k.begin() + static_cast<long>(i), "  __syncthreads();  // " + g.word());
        break;
      default:
        k.erase(k.begin() + static_cast<long>(i));
        break;
    }
  }
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string reference_module(Gen& g, const std::string& task) {
  std::string s = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    \"\"\"" + task +
                  " (synthetic reference)\"\"\"\n    def __init__(self):\n        super().__init__()\n\n"
                  "    def forward(self, x):\n";
  const int ops = 3 + g.pick(6);
  for (int i = 0; i < ops; ++i)
    s += "        x = torch." + g.word() + "(x) * " + std::to_string(g.pick(9) + 1) + "\n";
  s += "        return x\n\nbatch_size = " + std::to_string(16 << g.pick(5)) +
       "\ndim = " + std::to_string(1024 << g.pick(6)) +
       "\n\ndef get_inputs():\n    return [torch.randn(batch_size, dim)]\n\ndef get_init_inputs():\n    "
       "return []\n";
  return s;
}

std::string system_text() {
  std::string s =
      "# System\n\nYou write one CUDA kernel file that replaces the PyTorch reference below. (synthetic "
      "prompt)\n";
  for (int i = 0; i < 30; ++i)
    s += "- Rule " + std::to_string(i + 1) +
         ": the kernel must follow the ABI in kernel_abi.h and keep the outputs exact within tolerance.\n";
  return s;
}

struct Verdict {
  Outcome outcome;
  std::string sub, message, feedback, log;
};

Verdict draw_failure(Gen& g, int line) {
  switch (g.pick(7)) {
    case 0:
    case 1: {
      const std::string sub = g.pick(2) ? "undeclared" : "syntax";
      std::string msg =
          "kernel.cu:" + std::to_string(line) + ": error: identifier \"" + g.word() + "\" is undefined";
      return {Outcome::compile_error, sub, msg,
              msg + "\n    at line " + std::to_string(line) + " of your kernel",
              "nvcc -O3 -arch=sm_90 kernel.cu (synthetic)\n" + msg +
                  "\n1 error detected in the compilation of \"kernel.cu\".\n"};
    }
    case 2:
    case 3: {
      std::string msg = "output 0: max abs error " + std::to_string(g.uni()).substr(0, 5) + " at index " +
                        std::to_string(g.pick(4096));
      return {Outcome::output_mismatch, g.pick(3) ? "values" : "nan", msg, msg + "; 3 of 3 trials failed",
              ""};
    }
    case 4:
      return {Outcome::runtime_error, "illegal_memory_access",
              "CUDA error: an illegal memory access was encountered",
              "The kernel crashed: an illegal memory access (read past the end of the input?).", ""};
    case 5:
      return {Outcome::timeout, "run", "the candidate ran past its 30 s deadline",
              "Your kernel did not finish in 30 s.", ""};
    default:
      return {Outcome::format_error, "no_code_block", "the reply had no ```cuda code block",
              "No code block was found in your reply.", ""};
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out")
      o.out = next();
    else if (a == "--tasks")
      o.tasks = std::stoi(next());
    else if (a == "--samples")
      o.samples = std::stoi(next());
    else if (a == "--turns")
      o.turns = std::stoi(next());
    else if (a == "--seed")
      o.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--task-offset")
      o.task_offset = std::stoi(next());
    else if (a == "--model")
      o.model = next();
    else if (a == "--no-bench")
      o.bench = false;
    else if (a == "--cpu")
      o.cpu = true;
    else if (a == "--stop-on-pass")
      o.stop_on_pass = true;
    else {
      std::cerr << "kforge-synth-run: unknown argument " << a << "\n";
      return 2;
    }
  }
  if (o.out.empty() || o.tasks < 1 || o.samples < 1 || o.turns < 1) {
    std::cerr << "usage: kforge-synth-run --out DIR [--tasks N] [--samples N] [--turns N] [--seed N] "
                 "[--no-bench] [--cpu] "
                 "[--stop-on-pass] [--task-offset N] [--model NAME]\n";
    return 2;
  }
  if (fs::exists(o.out)) {
    std::cerr << "kforge-synth-run: " << o.out.string() << " exists\n";
    return 2;
  }
  fs::create_directories(o.out);
  Gen g{std::mt19937_64(o.seed)};
  const std::string backend = o.cpu ? "cpu" : "cuda", src_name = o.cpu ? "kernel.cpp" : "kernel.cu";
  nlohmann::json manifest{
      {"command", "run"},
      {"synthetic", "written by tests/tools/kforge-synth-run: no value in this run was measured"},
      {"config",
       {{"suite", "synthetic"},
        {"backend", backend},
        {"llm", "openai:" + o.model},
        {"samples", o.samples},
        {"turns", o.turns},
        {"stop_on", o.stop_on_pass ? "pass" : "never"},
        {"exemplar", "category"},
        {"history", "last"},
        {"bench", o.bench},
        {"seed", o.seed}}},
      {"runner", {{"device_name", o.cpu ? "synthetic CPU" : "synthetic GPU (H100-like peaks)"}}},
      {"schema_version", kRunSchemaVersion},
      {"created_at", "2026-11-24T08:00:00.000Z"}};
  write_file(o.out / "manifest.json", manifest.dump(2) + "\n");
  std::ofstream jl(o.out / "attempts.jsonl", std::ios::binary);
  const std::string sys = system_text();
  long clock_ms = 0;  // 16 episodes in flight: the run's clock advances by 1/16 of each attempt
  int records = 0;
  for (int ti = 0; ti < o.tasks; ++ti) {
    const std::string cat =
        kCategories[static_cast<std::size_t>((ti + o.task_offset) % static_cast<int>(kCategories.size()))];
    char id[96];
    std::snprintf(id, sizeof id, "%s/%03d_synth_%s", cat.c_str(), ti + o.task_offset, cat.c_str());
    const std::string task = id;
    const int difficulty = 1 + g.pick(3);
    const double skill = 0.15 + 0.6 * g.uni() / difficulty;  // chance a turn fixes the kernel
    const double t_ref = std::exp(g.normal(-1.0, 1.2));      // ms
    const std::string ref = reference_module(g, task);
    for (int s = 0; s < o.samples; ++s) {
      auto kernel = base_kernel(g, task, o.cpu);
      bool passed = false;
      double speed = std::exp(g.normal(-0.1, 0.6));
      std::string feedback;
      std::vector<std::string> prev_kernel;
      for (int t = 1; t <= o.turns; ++t) {
        if (passed && o.stop_on_pass) break;
        const fs::path dir = o.out / attempt_rel_path(task, s, t);
        fs::create_directories(dir);
        AttemptRecord r;
        r.task = task;
        r.category = cat;
        r.difficulty = difficulty;
        r.sample = s;
        r.turn = t;
        r.backend = backend;
        r.model = o.model;
        r.exemplar = "category";
        r.temperature = s == 0 ? 0.0 : 0.8;
        r.seed = o.seed + static_cast<unsigned>(s);
        r.attempt_dir = attempt_rel_path(task, s, t).generic_string();
        // The prompt: system, task, reference, and (history=last) the previous kernel and its feedback.
        std::string prompt =
            sys + "\n# Task " + task + " (category " + cat + ")\n\n```python\n" + ref + "```\n";
        if (t > 1)
          prompt += "\n# Your previous attempt (turn " + std::to_string(t - 1) + ")\n\n```cuda\n" +
                    join(prev_kernel) + "```\n\n## Feedback\n\n" + feedback + "\n";
        // An endpoint failure now and then: recorded, then asked again (the later record supersedes it).
        if (g.uni() < 0.01) {
          AttemptRecord e = r;
          e.outcome = Outcome::llm_error;
          e.sub_kind = "rate_limited";
          e.llm_status = "rate_limited";
          e.message = "LLM call failed: HTTP 429 (synthetic)";
          e.llm_ms = 30000;
          e.total_ms = 30000;
          e.started_at = "2026-11-24T08:00:00.000Z";
          e.finished_at = e.started_at;
          jl << to_jsonl(e);
          ++records;
        }
        if (t > 1) edit(g, kernel);
        Verdict v;
        if (passed || g.uni() < skill * (t == 1 ? 0.7 : 1.0)) {
          passed = true;
          speed *= std::exp(g.normal(0.08, 0.15));  // later turns tune the passing kernel
          v = {Outcome::pass, "", "",
               "max abs error 1.2e-06, max rel error 3.4e-07, tolerance ratio 0.012 (1 = at the tolerance)",
               ""};
        } else {
          v = draw_failure(g, 8 + g.pick(static_cast<int>(kernel.size()) - 8));
        }
        r.outcome = v.outcome;
        r.sub_kind = v.sub;
        r.message = v.message;
        r.llm_status = "ok";
        r.llm_ms = 8000 + 30000 * g.uni();
        r.compile_ms = v.outcome == Outcome::format_error ? 0 : 2000 + 12000 * g.uni();
        r.compile_cached = r.compile_ms > 0 && g.uni() < 0.05;
        r.prompt_tokens = static_cast<std::int64_t>(prompt.size() / 4);
        r.completion_tokens = 600 + g.pick(2400);
        r.cost_usd = r.prompt_tokens * 3e-6 + r.completion_tokens * 15e-6;
        if (v.outcome == Outcome::pass || v.outcome == Outcome::output_mismatch ||
            v.outcome == Outcome::runtime_error || v.outcome == Outcome::timeout) {
          r.check_ms = v.outcome == Outcome::timeout ? 30000 : 800 + 2500 * g.uni();
          r.trials = 5;
          r.trials_passed = v.outcome == Outcome::pass ? 5 : 0;
          r.max_abs_err = v.outcome == Outcome::pass ? 1.2e-6 : g.uni();
          r.max_rel_err = v.outcome == Outcome::pass ? 3.4e-7 : g.uni();
          r.tolerance_ratio = v.outcome == Outcome::pass ? 0.012 : 10 + 100 * g.uni();
        }
        if (v.outcome == Outcome::pass && o.bench) {
          r.bench_ms = 1500 + 4000 * g.uni();
          r.speedup = speed;
          r.t_reference_ms = t_ref;
          r.t_candidate_ms = t_ref / speed;
          r.t_candidate_p10_ms = r.t_candidate_ms * 0.98;
          r.t_candidate_p90_ms = r.t_candidate_ms * 1.03;
          r.cv = 0.02;
          r.speedup_ci_low = speed * 0.97;
          r.speedup_ci_high = speed * 1.03;
          r.achieved_gbps = 3000 * std::min(0.95, 0.3 * speed);
          if (!o.cpu) {
            r.profile.profiler = "ncu";
            r.profile.profiler_ms = 4000 + 9000 * g.uni();
            r.profile.peaks_device = "synthetic GPU";
            r.profile.peak_gbps = 3000;
            r.profile.peak_tflops = 60;
            r.profile.dram_fraction = std::min(0.95, 0.3 * speed * (0.8 + 0.4 * g.uni()));
            r.profile.flops_fraction =
                std::min(0.9, 0.05 * speed * g.uni() * (cat == "matmul" || cat == "conv" ? 8 : 1));
            r.profile.bottleneck = r.profile.dram_fraction > 0.6    ? "memory-bound"
                                   : r.profile.flops_fraction > 0.5 ? "compute-bound"
                                                                    : "latency-bound";
            r.profile.bottleneck_reason = "DRAM at " +
                                          std::to_string(static_cast<int>(100 * r.profile.dram_fraction)) +
                                          "% of the measured peak";
            r.profile.findings.push_back({"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                          "DRAM throughput", 100 * r.profile.dram_fraction, "%",
                                          r.profile.bottleneck_reason, 1});
            r.profile.findings.push_back({"smsp__warps_issue_stalled_long_scoreboard",
                                          "long-scoreboard stalls", 30 * g.uni(), "%",
                                          "warps wait on global loads", 0.5});
            r.profile.findings.push_back({"sm__warps_active.avg.pct_of_peak", "achieved occupancy",
                                          40 + 60 * g.uni(), "%", "occupancy is not the limit", 0.2});
            r.profile.candidate_kernels.push_back(
                {"body_synth(float const*, float*, long)", r.t_candidate_ms * 0.9, 1});
            r.profile.resources.push_back(
                {"body_synth(float const*, float*, long)", "sm_90", 24 + g.pick(64), 0, 0, 0, 0, 0, 380});
          }
        }
        r.total_ms = r.llm_ms + r.compile_ms + r.check_ms + r.bench_ms + r.profile.profiler_ms + 50;
        char ts[64];
        auto stamp = [&](long ms) {
          const long sec = ms / 1000;
          std::snprintf(ts, sizeof ts, "2026-11-24T%02ld:%02ld:%02ld.%03ldZ", 8 + sec / 3600, (sec / 60) % 60,
                        sec % 60, ms % 1000);
          return std::string(ts);
        };
        r.started_at = stamp(clock_ms);
        r.finished_at = stamp(clock_ms + static_cast<long>(r.total_ms));
        clock_ms += static_cast<long>(r.total_ms / 16);
        const std::string ksrc = join(kernel);
        r.source_sha = "synthetic";
        std::string reply =
            "[synthetic reply] Turn " + std::to_string(t) + ": " +
            (t == 1 ? "a first kernel for " + task + "."
                    : "I fixed the reported problem (" + g.word() + ") and kept the layout.") +
            "\nEach thread handles kUnroll elements; loads stay coalesced.\n\n";
        if (v.outcome != Outcome::format_error)
          reply += "```" + std::string(o.cpu ? "cpp" : "cuda") + "\n" + ksrc + "```\n";
        reply +=
            "\nThe launch uses " + std::to_string(g.pick(1024) + 1) + " blocks for the synthetic shape.\n";
        write(dir / "prompt.md", prompt);
        write(dir / "response.txt", reply);
        if (v.outcome != Outcome::format_error) write(dir / src_name, ksrc);
        if (!v.log.empty()) write(dir / "build.log", v.log);
        nlohmann::json res{{"outcome", std::string(to_string(r.outcome))},
                           {"sub_kind", r.sub_kind},
                           {"message", v.feedback},
                           {"llm_status", "ok"},
                           {"in_history", true},
                           {"synthetic", true}};
        write(dir / "result.json", res.dump(2));
        jl << to_jsonl(r);
        ++records;
        feedback = v.feedback;
        prev_kernel = kernel;
      }
    }
  }
  jl.close();
  std::cout << "kforge-synth-run: wrote " << records << " records to " << o.out.string() << "\n";
  return 0;
}
