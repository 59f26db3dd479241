// The judge's part of the profile step (issue 11 §1; runner.hpp): the files and command lines
// of one profiled candidate call and one profiled reference call. Nsight Compute itself is
// run by the caller (backends/profile.hpp), never inside this process.
#include <fstream>

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_profiler_api.h>
#endif

#include "runner.hpp"

namespace kforge::runner {

namespace {

void header_line(std::ofstream& f, const char* kind, at::ScalarType dtype, at::IntArrayRef sizes) {
  f << kind << ' ' << static_cast<int>(to_kf_dtype(dtype)) << ' ' << sizes.size();
  for (auto s : sizes) f << ' ' << s;
  f << '\n';
}

}  // namespace

void write_tensor_file(const std::string& path, const std::vector<at::Tensor>& args,
                       const std::vector<TensorSpec>& out_specs) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "kforge-tensors 1\n";
  for (const auto& t : args) header_line(f, "in", t.scalar_type(), t.sizes());
  for (const auto& o : out_specs) header_line(f, "out", scalar_type_of(o.dtype), o.shape);
  f << "data\n";
  for (const auto& t : args) {
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  }
  if (!f.flush()) throw std::runtime_error("cannot write " + path);
}

nlohmann::json profile_setup(LoadedTask& task, nlohmann::json load_request, const nlohmann::json& req,
                             const std::string& host_exe, const std::string& runner_exe,
                             const at::Device& device) {
  const std::string dir = req.at("dir").get<std::string>();
  const int64_t seed = req.value("seed", 3000);
  std::vector<at::Tensor> args;
  for (const auto& h : task.ref.make_inputs(seed)) args.push_back(h.t);
  for (const auto& h : task.params) args.push_back(h.t);
  const std::string tensors = dir + "/profile_tensors.bin", reference = dir + "/profile_reference.json";
  write_tensor_file(tensors, args, task.out_specs);
  load_request["profile_seed"] = seed;
  std::ofstream rf(reference, std::ios::trunc);
  rf << load_request.dump() << '\n';
  if (!rf.flush()) throw std::runtime_error("cannot write " + reference);
  const std::string dev = std::to_string(device.is_cuda() ? device.index() : -1);
  return {{"ok", true},
          {"candidate", {host_exe, "--profile", req.at("artifact").get<std::string>(), dev, tensors}},
          {"reference", {runner_exe, "--profile-reference", reference}}};
}

void profile_reference_call(Reference& ref, int64_t seed, const at::Device& device) {
  auto inputs = ref.make_inputs(seed);
  ref.run(inputs);  // untimed: caches, autotuning, lazy loading
  sync_device(device);
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) cudaProfilerStart();
#endif
  ref.run(inputs);
  sync_device(device);
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) cudaProfilerStop();
#endif
}

}  // namespace kforge::runner
