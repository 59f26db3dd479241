/* kforge/kernel_abi.h — the only header a kforge cpu/cuda candidate includes (README.md, "The
 * kernel contract (cpu, cuda)"; `kforge task SUITE ID` prints a task's tensors in this order).
 *
 * The runner calls the candidate's one entry point, kf_forward, with views of tensors it
 * owns. Inputs are the task's get_inputs() in order, followed by the model's parameters
 * (named_parameters() order) and then its buffers (named_buffers() order). Every input is
 * contiguous (row-major); a Python number in get_inputs() arrives as a rank-0 tensor in
 * host memory (device == -1). Outputs are preallocated by the runner with the reference's
 * shapes and dtypes, contiguous, and filled with poison (NaN / a sentinel): the kernel
 * must write every element. For the cuda backend all data pointers are device pointers on
 * the current device and `stream` is the cudaStream_t the runner times; work must run on
 * it (or be finished before kf_forward returns). For the cpu backend `stream` is NULL.
 * kf_forward returns 0 on success; non-zero reports a runtime_error.
 * The candidate owns nothing it is given and must not keep pointers between calls.
 */
#ifndef KFORGE_KERNEL_ABI_H
#define KFORGE_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KF_MAX_DIMS 8

/** Element types; values are stable (they appear in the runner protocol). A complex element is
 * its real part followed by its imaginary part (C's float _Complex / double _Complex layout:
 * complex64 = two float32, complex128 = two float64); sizes and strides count complex
 * elements. */
typedef enum kf_dtype {
  KF_FLOAT32 = 0,
  KF_FLOAT16 = 1,
  KF_BFLOAT16 = 2,
  KF_FLOAT64 = 3,
  KF_INT32 = 4,
  KF_INT64 = 5,
  KF_BOOL = 6,
  KF_UINT8 = 7,
  KF_INT8 = 8,
  KF_INT16 = 9,
  KF_COMPLEX64 = 10,
  KF_COMPLEX128 = 11
} kf_dtype;

/** A non-owning view of one tensor. strides are in elements, not bytes. */
typedef struct kf_tensor {
  void* data;
  int32_t dtype; /* a kf_dtype */
  int32_t ndim;  /* 0 .. KF_MAX_DIMS */
  int64_t sizes[KF_MAX_DIMS];
  int64_t strides[KF_MAX_DIMS];
  int32_t device; /* -1: host memory; >= 0: CUDA device ordinal */
} kf_tensor;

/** The candidate's entry point. */
int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream);

/** Number of elements of a tensor view. */
static inline int64_t kf_numel(const kf_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->sizes[i];
  return n;
}

/** ATen-operator tasks (issue 24) on the cpu and cuda backends: the candidate defines
 *
 *   extern "C" int <op>_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs,
 *                                   int n_outputs, const kf_arg* args, int n_args, void* stream);
 *
 * called once per call of the operator. `args` are the call's arguments in order (positional,
 * then keyword ones by name); a tensor argument is `inputs[arg.tensor]` — a view that may be
 * strided (sizes and strides as given, not necessarily contiguous). `outputs` are the operator's
 * results (a tuple's elements in order), preallocated contiguous with the operator's shapes and
 * dtypes and filled with poison: write every element. The judge calls it on every case of the
 * task through kforge's own kf_forward; an exported library calls it from PyTorch. */
typedef enum kf_arg_kind {
  KF_ARG_TENSOR = 0,  /* tensor: index into inputs */
  KF_ARG_INT = 1,     /* i */
  KF_ARG_FLOAT = 2,   /* f (inf and nan as such) */
  KF_ARG_BOOL = 3,    /* i: 0 or 1 */
  KF_ARG_NONE = 4,    /* Python None */
  KF_ARG_INTS = 5,    /* a list of integers: n, ints */
  KF_ARG_TENSORS = 6, /* a list of tensors: n, ints = indices into inputs */
  KF_ARG_OTHER = 7    /* anything else: text, its Python literal ('tanh', torch.float16, ...) */
} kf_arg_kind;

typedef struct kf_arg {
  const char* name; /* "" for a positional argument, else the keyword */
  int32_t kind;     /* a kf_arg_kind */
  int32_t tensor;
  int64_t i;
  double f;
  int32_t n;
  const int64_t* ints;
  const char* text;
} kf_arg;

#ifdef __cplusplus
}
#endif

#endif /* KFORGE_KERNEL_ABI_H */
