// kforge/agent/doctor.hpp — `kforge doctor`: what this machine can do for kforge.
// Probes compilers (g++, nvcc), GPUs (nvidia-smi), the runner's LibTorch / Python torch /
// Triton versions, and derives which backends are usable. Each probe is a sandboxed child
// with a short timeout; a missing tool is reported, never thrown. Thread-safe (no state).
#pragma once

#include <string>
#include <vector>

namespace kforge::agent {

struct DoctorReport {
  std::string gxx;                ///< first line of `g++ --version`, "" if missing
  std::string nvcc;               ///< release line of `nvcc --version`, "" if missing
  std::vector<std::string> gpus;  ///< "name, compute capability, memory"
  std::string runner;             ///< the runner's hello JSON, "" if it did not start
  std::string runner_error;
  std::vector<std::pair<std::string, std::string>> backends;  ///< (name, "usable" or why not)
};

DoctorReport run_doctor();
/// Human-readable text of the report.
std::string render_doctor(const DoctorReport& r);

}  // namespace kforge::agent
