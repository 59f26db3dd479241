#include "kforge/agent/doctor.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::agent {

namespace {

sandbox::Result probe(std::vector<std::string> argv) {
  sandbox::Spec s;
  s.argv = std::move(argv);
  s.limits.wall = std::chrono::milliseconds(20'000);
  s.isolate_network = false;
  return sandbox::run(s);
}

std::string first_line_matching(const std::string& text, const std::string& needle) {
  for (const auto& l : split_lines(text))
    if (needle.empty() || l.find(needle) != std::string::npos) return trim(l);
  return "";
}

}  // namespace

DoctorReport run_doctor() {
  DoctorReport r;
  if (auto res = probe({"g++", "--version"}); res.ok()) r.gxx = first_line_matching(res.out, "");
  if (auto nvcc = backends::find_executable("nvcc").value_or("/usr/local/cuda/bin/nvcc"); true) {
    if (auto res = probe({nvcc.string(), "--version"}); res.ok())
      r.nvcc = first_line_matching(res.out, "release");
  }
  if (auto res = probe({"nvidia-smi", "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader"});
      res.ok())
    for (const auto& l : split_lines(res.out))
      if (!trim(l).empty()) r.gpus.push_back(trim(l));
  backends::RunnerConfig rc;
  rc.device = "cpu";
  backends::RunnerClient client(rc);
  const auto said = client.hello();
  if (said) r.runner = said.value();
  if (!said)
    r.runner_error =
        "kforge-runner at " + client.config().runner.string() + " did not start: " + said.failure().message;
  bool runner_ok = !r.runner.empty();
  bool runner_cuda = false, runner_triton = false;
  if (runner_ok) {
    auto j = nlohmann::json::parse(r.runner);
    runner_cuda = j.value("cuda_available", false) && j.value("runner_cuda", false);
    runner_triton = j.contains("triton") && j["triton"].is_string();
  }
  // Every registered backend: its toolchain, the judge, and a GPU where its kernels need one.
  for (const auto& name : backends::backend_names()) {
    const backends::Backend& b = backends::get_backend(name);
    std::string state = "usable";
    if (!b.find_compiler({}))
      state = "not usable: " + b.compile_argv("kernel", "kernel.so", {}).front() + " not found";
    else if (!runner_ok)
      state = "not usable: " + r.runner_error;
    else if (b.artifact_kind() == backends::ArtifactKind::python_module && !runner_triton)
      state = "not usable: the runner's Python has no triton";
    else if (b.on_gpu() && !runner_cuda)
      state = "compile only: no GPU visible to the runner (or its LibTorch has no CUDA)";
    else if (b.artifact_kind() == backends::ArtifactKind::python_module && !b.on_gpu())
      state = "usable (no GPU: Triton's interpreter runs the kernels on the CPU)";
    r.backends.push_back({name, state});
  }
  return r;
}

std::string render_doctor(const DoctorReport& r) {
  std::ostringstream o;
  o << "compilers\n";
  o << "  g++    " << (r.gxx.empty() ? "not found" : r.gxx) << "\n";
  o << "  nvcc   " << (r.nvcc.empty() ? "not found" : r.nvcc) << "\n";
  o << "gpus\n";
  if (r.gpus.empty()) o << "  none (nvidia-smi found no GPU)\n";
  for (const auto& g : r.gpus) o << "  " << g << "\n";
  o << "runner\n";
  if (r.runner.empty()) {
    o << "  " << r.runner_error << "\n";
  } else {
    auto j = nlohmann::json::parse(r.runner);
    o << "  LibTorch " << j.value("libtorch", "?") << ", Python torch " << j.value("torch", "?")
      << ", Python " << first_line_matching(j.value("python", "?"), "") << "\n";
    o << "  Triton   " << (j["triton"].is_string() ? j["triton"].get<std::string>() : "not installed")
      << "\n";
    o << "  CUDA     "
      << (j.value("cuda_available", false) ? "available (torch CUDA " + j.value("torch_cuda", "?") + ")"
                                           : "not available")
      << (j.value("runner_cuda", false) ? "" : "; runner built without CUDA") << "\n";
    for (const auto& d : j.value("devices", nlohmann::json::array()))
      o << "  device " << d.value("index", 0) << ": " << d.value("name", "?") << ", sm " << d.value("cc", "?")
        << ", " << d.value("memory_bytes", int64_t{0}) / (1 << 20) << " MiB\n";
  }
  o << "backends\n";
  for (const auto& [n, s] : r.backends) o << "  " << n << ": " << s << "\n";
  return o.str();
}

}  // namespace kforge::agent
