// The judge's part of the profile step (issue 11 §1; runner.hpp): the files and command lines
// of one profiled candidate call and one profiled reference call. Nsight Compute itself is
// run by the caller (backends/profile.hpp), never inside this process.
#include <fstream>

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_profiler_api.h>
#endif

#include "judge.hpp"
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

nlohmann::json model_spec(LoadedTask& task) {
  const std::size_t n_inputs = task.in_specs.size() - task.params.size();
  nlohmann::json state = nlohmann::json::array();
  for (std::size_t i = n_inputs; i < task.in_specs.size(); ++i)
    state.push_back({task.in_specs[i].name, task.in_specs[i].kind});
  return {{"init", nlohmann::json::parse(task.ref.init_inputs_json(), nullptr, false)},
          {"inputs", n_inputs},
          {"state", state},
          {"mode", task.ref.module_mode()}};
}

std::vector<std::string> profile_candidate_argv(const JudgeContext& ctx, const std::string& artifact,
                                                kforge::backends::HostKind host, const std::string& device,
                                                const std::string& tensors, const std::string& model_file) {
  if (host == kforge::backends::HostKind::native)
    return {ctx.host_exe, "--profile", artifact, device, tensors};
  if (ctx.python.empty() || ctx.triton_host.empty())
    throw std::runtime_error("this kforge-runner has no Triton candidate host (python / host.py not set)");
  return {ctx.python,      "-I",   "-B",    ctx.triton_host,   "--profile",
          artifact,        device, tensors, ctx.pyconfine_lib, model_file,
          ctx.triton_cache};
}

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text << '\n';
  if (!f.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

kforge::backends::protocol::ProfileSetupReply profile_setup(
    LoadedTask& task, kforge::backends::protocol::LoadRequest load_request,
    const kforge::backends::protocol::ProfileSetupRequest& req, const JudgeContext& ctx,
    const std::string& runner_exe) {
  const std::string& dir = req.dir;
  const int64_t seed = req.seed;
  std::vector<at::Tensor> args;
  for (const auto& h : task.ref.make_inputs(seed)) args.push_back(h.t);
  for (const auto& h : task.params) args.push_back(h.t);
  const std::string tensors = dir + "/profile_tensors.bin", reference = dir + "/profile_reference.json",
                    model = dir + "/profile_model.json";
  write_tensor_file(tensors, args, task.out_specs);
  load_request.profile_seed = seed;
  write_text(reference,
             kforge::backends::protocol::encode(kforge::backends::protocol::Request(load_request)).dump());
  const std::string& artifact = req.candidate.artifact;
  const std::string dev = std::to_string(ctx.device.is_cuda() ? ctx.device.index() : -1);
  auto candidate = profile_candidate_argv(ctx, artifact, req.candidate.host, dev, tensors, model);
  if (candidate.size() > 5)  // the Triton host builds a ModelNew from the judge's description
    write_text(model, model_spec(task).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return {candidate, {runner_exe, "--profile-reference", reference}};
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
