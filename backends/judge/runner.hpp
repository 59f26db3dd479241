// backends/judge/runner.hpp — internals of kforge-runner (not a public header).
//
// kforge-runner is a warm worker: one process per device, speaking JSON lines on its
// stdin/stdout (protocol: backends/client/include/kforge/backends/runner_client.hpp). It embeds
// Python to run the reference Model and uses LibTorch (and CUDA when built with it) to
// own inputs, outputs, comparison and timing. Single-threaded: everything below runs on
// the main thread, which holds the GIL.
#pragma once

#include <ATen/ATen.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/kernel_abi.h"

namespace kforge::runner {

namespace py = pybind11;

/// One tensor argument or result, described for the prompt and the protocol.
struct TensorSpec {
  std::string name;
  std::string kind;  ///< "input", "parameter", "buffer", "output"
  std::vector<int64_t> shape;
  std::string dtype;  ///< torch name without the prefix: "float32", "int64", ...
};

/// A Python tensor viewed from C++ without a copy; `owner` keeps the storage alive.
struct HeldTensor {
  py::object owner;
  at::Tensor t;
};

/// A reference that ran but cannot judge (its own runs disagree): Reference::load's typed
/// failure, answered with JudgeError::unjudgeable; what() says why ("unjudgeable: ...").
struct UnjudgeableReference : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The reference side, run in the embedded interpreter (python_reference.cpp).
class Reference {
 public:
  /// Executes the task source, builds the model under `model_seed` on `device`, in
  /// `module_mode` ("train" | "eval"; "" = the source's `__kforge_module_mode__` line, else
  /// eval), and runs it twice on one input set: differing outputs throw UnjudgeableReference.
  /// A TritonBench gold's performance module (`__kforge_gold_agreement__`) runs twice with its
  /// unwritten memory poisoned differently instead (`testblock_py`: backends/triton/testblock.py)
  /// and keeps the elements it determines (masks()); one that determines no element of an
  /// output throws UnjudgeableReference. Throws py::error_already_set on Python errors.
  void load(const std::string& task_id, const std::string& file, const std::string& source,
            const std::string& device, int64_t model_seed, const std::string& module_mode = "",
            const std::string& testblock_py = "");
  bool loaded() const { return loaded_; }
  /// Per output of the loaded model: undefined where the reference determines every element,
  /// else a bool tensor of its shape, true at the elements it determines (load()).
  std::vector<HeldTensor> masks();
  /// get_inputs() under `seed`, on the device, contiguous.
  std::vector<HeldTensor> make_inputs(int64_t seed);
  /// The reference timed by triton.testing.do_bench in this process (median ms).
  double triton_do_bench(const std::vector<HeldTensor>& inputs);
  /// A suite's FLOP/byte formula evaluated over the module's constants; 0 for "".
  double formula(const std::string& expr);
  /// One call's FLOPs on `inputs` by PyTorch's FLOP counter (FlopCounterMode: matmuls,
  /// convolutions, attention; elementwise work counts 0); 0 when it cannot count.
  double count_flops(const std::vector<HeldTensor>& inputs);
  /// Parameters then buffers, detached and contiguous.
  std::vector<HeldTensor> parameters();
  /// Runs the model on the inputs (no grad); one tensor per output.
  std::vector<HeldTensor> run(const std::vector<HeldTensor>& inputs, bool compiled = false);
  /// Runs a float64 copy of the model on the inputs widened to float64: the near-exact values
  /// that a float32 reference approximates. Empty when the model cannot run in float64.
  std::vector<HeldTensor> run_float64(const std::vector<HeldTensor>& inputs);
  /// get_init_inputs() of the loaded model as JSON ("null" when it is not JSON: a KernelBench
  /// ModelNew candidate cannot be built then).
  std::string init_inputs_json();
  /// The module mode the model runs in ("train" | "eval").
  std::string module_mode();
  /// Names of forward()'s positional arguments, parameter and buffer names.
  std::vector<TensorSpec> input_specs(const std::vector<HeldTensor>& inputs,
                                      const std::vector<HeldTensor>& params);
  std::string device() const { return device_; }

 private:
  py::object support_;
  py::object unjudgeable_;  ///< the support code's Unjudgeable exception class
  bool loaded_ = false;
  std::string device_;
};

/// Converts a torch.Tensor (Python) to an at::Tensor view of the same memory.
HeldTensor hold(py::handle tensor);
std::string dtype_name(at::ScalarType t);
/// Inverse of dtype_name; throws std::runtime_error for an unsupported name.
at::ScalarType scalar_type_of(const std::string& name);
kf_dtype to_kf_dtype(at::ScalarType t);
kf_tensor to_kf(const at::Tensor& t);

/// Tolerance per dtype name; "*" applies to all.
struct Tolerances {
  std::map<std::string, std::pair<double, double>> by_dtype;  ///< dtype -> (atol, rtol)
  std::pair<double, double> for_dtype(const std::string& dtype) const;
};

/// Result of comparing one output of one trial (tensor_check.cpp).
struct Comparison {
  bool ok = true;
  std::string sub_kind;  ///< "shape", "dtype", "unwritten", "nan_inf", "values"
  std::string message;
  int64_t mismatched = 0;
  int64_t numel = 0;
  int64_t unwritten = 0;
  int64_t nan_inf = 0;
  double max_abs = 0;  ///< max |a - e| over written elements with a finite error (passes too)
  double max_rel = 0;  ///< max |a - e| / (|e| + atol): the floor keeps near-zero references from dominating
  /// max |a - e| / (effective_atol + rtol |e|): how close to the line (<= 1 within tolerance).
  double tolerance_ratio = 0;
  double atol = 0, rtol = 0;  ///< the dtype's tolerance
  double effective_atol = 0;  ///< atol after scaling by the reference's magnitude (effective_atol())
  std::vector<int64_t> worst_index;
  double expected = 0, actual = 0;
};

/// The absolute tolerance actually applied: min(atol, kAtolScale * rms(expected)), where rms is
/// over the reference's finite elements. kforge's rule (issue 9 §3, after KernelBench issue
/// #165, where an all-zero output passed a softmax over many classes because every expected
/// value was below atol): atol is a floor for values near zero *relative to the output's
/// scale*, so it may not exceed 1% of the typical magnitude. Outputs of rms >= atol / kAtolScale
/// (fp32: 1e-2) are unaffected. It never goes below the dtype's own floor (float32, bfloat16:
/// the smallest normal, 1.2e-38; float64: 2.2e-308; float16: its smallest subnormal, 6e-8): below
/// that, a difference is a flush-to-zero of a subnormal, not an error (TritonBench-G's
/// mul_exponent_compensator expects 1.4e-45, which a GPU flushing subnormals writes as 0).
inline constexpr double kAtolScale = 1e-2;
double effective_atol(double atol, double rms_expected, at::ScalarType dtype);

/// Output storage with canary regions before and after the view handed to the kernel.
struct GuardedOutput {
  at::Tensor storage;  ///< 1-D, guard + numel + guard elements
  at::Tensor view;     ///< the output, contiguous, shape of the reference
  int64_t guard = 0;
};
GuardedOutput make_guarded_output(const std::vector<int64_t>& shape, at::ScalarType dtype,
                                  const at::Device& device);
/// True when both canary regions still hold the sentinel.
bool guards_intact(const GuardedOutput& g);
/// True where the element still holds the poison bit pattern.
at::Tensor poison_mask(const at::Tensor& t);
/// Compares one output: floats elementwise |a - e| <= effective_atol + rtol |e| where the
/// reference is finite (NaN matches NaN; an infinity matches only itself), then rejects a constant output
/// where the reference is not constant; integers and bool exactly, in their own dtype. Fills the error
/// figures on passes too. `rms_expected` >= 0: the root-mean-square of the finite reference values, given by
/// a caller that compares a large tensor in chunks (compare_chunked); < 0: computed here.
Comparison compare(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol,
                   double rms_expected = -1);
/// The passing Comparison of a float output (float32/64, float16, bfloat16) when compare()'s rule
/// holds for every element and the output is not constant where the reference varies, found in
/// two reads of memory (compare_core.hpp; on the GPU, compare_cuda.cu); nullopt when it does
/// not hold or the path does not apply. One difference from compare_chunked's slices: the
/// constant-output rule looks at the whole output.
std::optional<Comparison> fused_pass(const at::Tensor& actual, const at::Tensor& expected,
                                     const Tolerances& tol);
/// The judge's comparison of one output: fused_pass() first; anything it does not pass goes
/// to compare() over slices of at most 2^27 elements, so that its temporaries stay bounded on
/// multi-GB outputs (the magnitude scaling uses the whole reference's RMS), which has the last
/// word and describes the failure: the first failing slice (counts are that slice's).
Comparison compare_chunked(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol);
/// compare_chunked() on the elements where `keep` (bool, the reference's shape) is true, the
/// only ones the reference determines (a TritonBench gold that leaves memory unwritten or is
/// nondeterministic there: testblock.py gold_agreement). Shape and dtype are checked on the whole
/// tensors; counts are of the kept elements; indices in the message and worst_index are the
/// original tensor's.
Comparison compare_masked(const at::Tensor& actual, const at::Tensor& expected, const at::Tensor& keep,
                          const Tolerances& tol);
/// How much more error than the reference's own is excused when a float output is judged
/// against a float64 truth (compare_with_truth).
inline constexpr double kOwnErrorFactor = 8;
/// A second look at an output that `failed` (compare_chunked, sub-kind "values") against the
/// float32 reference `expected`, for inputs where float32 itself is inexact (cancellation on
/// wide inputs): an element also passes when |a - truth| <= effective_atol + rtol |expected| +
/// kOwnErrorFactor * max(|expected - truth|, rms over the tensor of |expected - truth|), i.e.
/// the candidate is about as accurate as the reference's own float32 evaluation against the
/// float64 `truth`. Non-finite and unwritten elements keep compare()'s rule. Returns the
/// passing Comparison, or `failed` unchanged.
Comparison compare_with_truth(const at::Tensor& actual, const at::Tensor& expected, const at::Tensor& truth,
                              const Comparison& failed);

/// Bytes of a contiguous tensor of this spec (exchange.cpp).
int64_t bytes_of(const TensorSpec& s);
/// True for the model's parameters and buffers: one copy shared by every input set.
bool is_model_state(const TensorSpec& s);

/// Milliseconds since t0 on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// True when no floating-point tensor holds a NaN or an infinity.
bool all_finite(const std::vector<HeldTensor>& ts);

/// A task loaded in the judge: the reference model, its pristine parameters and buffers (the
/// judge's own; candidates only ever see copies) and the tensor specs of the C ABI.
struct LoadedTask {
  Reference ref;
  std::vector<HeldTensor> params;
  std::vector<TensorSpec> in_specs, out_specs;  ///< in_specs: inputs, then parameters and buffers
  /// Per output: undefined, every element is compared; else the bool tensor of the elements the
  /// reference determines, the only ones a candidate is compared on (Reference::masks()).
  std::vector<HeldTensor> out_masks;
};

/// Timing statistics over repetitions, in milliseconds (timing.cpp).
struct Stats {
  double median = 0, p10 = 0, p90 = 0, mean = 0, cv = 0, min = 0;
  int reps = 0;
};
Stats stats_of(std::vector<double> ms);

/// Waits for everything queued on a CUDA device (cudaDeviceSynchronize); nothing on the CPU.
void sync_device(const at::Device& device);

/// A measured peak and how it was measured (sizes, threads, repetitions), for the record.
struct Measured {
  double per_s = 0;
  std::string method;
};
/// Versions the peaks' method: a client's cache of peaks measured by an older method (a
/// single-threaded at::mm on the CPU) is measured again (agent/src/evaluation.cpp device_peaks
/// holds the same prefix).
constexpr const char* kPeaksMethodVersion = "kforge-peaks/2";

/// The device's peak memory bandwidth as the judge can reach it (bytes/s): the best of five
/// timed fills (bytes written / s) and copies (bytes read + written / s) of a buffer far larger
/// than the last-level cache (cuda: 1 GiB, or an eighth of free memory; cpu: 256 MiB), after one
/// untimed round; on the CPU also a copy by one pinned thread per usable CPU
/// (measure_cpu_bandwidth_peak), the best of all. About 20 ms on an H100. The bound of the
/// impossible-speedup rule.
Measured measure_peak_bandwidth(const at::Device& device);
/// FP32 FLOP/s: on cuda, an n x n matmul (n = 4096) with TF32 off, 2 n^3 / the best of five
/// timed calls after one untimed; on the CPU the best of a 1024^2 at::mm and every usable CPU
/// running independent vector FMA chains (measure_cpu_fma_peak).
Measured measure_fp32_flops(const at::Device& device);

/// The CPU's FP32 FMA rate (FLOP/s): one thread pinned to each CPU of the affinity mask (at most
/// OMP_NUM_THREADS), each running 12 independent chains of the widest FMA the CPU has (AVX-512:
/// 16 lanes, AVX2: 8; else 8 chains of 4-wide multiply-adds); the best of 3 after one warm-up.
/// About 0.4 s. (peak_cpu.cpp)
Measured measure_cpu_fma_peak();
/// The CPU's memory bandwidth (bytes/s) as every usable CPU reaches it: each pinned thread
/// copies its part of a `bytes` buffer into another ((read + write) / s), best of 3 after one.
Measured measure_cpu_bandwidth_peak(int64_t bytes);

/// Writes the tensor file of kforge-host's profile mode (backends/host/host.hpp: a text header,
/// then the raw bytes): `args` in the C ABI's order, then the output specs. Throws
/// std::runtime_error naming the path when it cannot be written.
void write_tensor_file(const std::string& path, const std::vector<at::Tensor>& args,
                       const std::vector<TensorSpec>& out_specs);

/// (profile_setup, the request that writes these files: judge.hpp.)

/// `kforge-runner --profile-reference FILE`: one untimed reference call, then one between
/// cudaProfilerStart/Stop (what Nsight Compute profiles with --profile-from-start off).
void profile_reference_call(Reference& ref, int64_t seed, const at::Device& device);

}  // namespace kforge::runner
