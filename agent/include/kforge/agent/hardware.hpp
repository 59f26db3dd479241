#pragma once
// kforge/agent/hardware.hpp — filling prompts::HardwareFacts for the machine a run targets
// (issue 11 §3). The parsing functions are pure (tests feed them recorded text); the gathering
// functions read /proc, sysconf, cpuid and run `nvidia-smi` through sandbox::run.
//
// OpenMP rule (stated in the cpu prompt): a cpu kernel runs with OMP_NUM_THREADS threads when
// kforge's environment sets it (the sandbox passes it on), else with every hardware thread the
// process may run on (sched_getaffinity), which is libgomp's own default.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kforge/prompts/hardware.hpp"

namespace kforge::agent {

/// Facts about the host CPU: model name, cores and threads (/proc/cpuinfo, sysconf), OpenMP
/// threads (rule above), SIMD (cpuid via __builtin_cpu_supports on x86; NEON on aarch64).
prompts::HardwareFacts cpu_facts();

/// Parses /proc/cpuinfo text: model name, physical cores (distinct (physical id, core id)
/// pairs; "cpu cores" when those are missing) and logical processors.
prompts::HardwareFacts parse_cpuinfo(std::string_view cpuinfo);

/// The vendor's figures for a GPU model by name (SM count, DRAM GB/s, L2), for the GPUs kforge
/// is run on; fields stay 0 for an unknown name.
void add_known_gpu_specs(prompts::HardwareFacts& f);

/// Facts of CUDA device `index` from the runner's hello (devices[i]: name, cc, memory_bytes,
/// sm_count or multi_processor_count when present) and, when not empty, the output of
/// `nvidia-smi --query-gpu=index,name,memory.total,compute_cap --format=csv,noheader,nounits`.
/// The hello wins where both give a value; vendor figures fill the rest.
prompts::HardwareFacts parse_cuda_facts(const nlohmann::json& hello, int index, std::string_view smi_csv);

/// parse_cuda_facts with nvidia-smi run in the sandbox (skipped when absent).
prompts::HardwareFacts cuda_facts(const nlohmann::json& hello, int index);

/// The facts of the device a run targets: cpu_facts() for "cpu", else cuda_facts() of its index.
prompts::HardwareFacts device_facts(const nlohmann::json& hello, const std::string& device);

/// The device index of "cuda:N" (0 for "cuda" or anything unparsable).
int cuda_index(const std::string& device);

}  // namespace kforge::agent
