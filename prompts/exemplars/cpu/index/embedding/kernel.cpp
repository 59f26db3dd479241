// index/embedding, cpu backend: out[t, :] = weight[ids[t], :] for every token t. Inputs are
// the int64 ids (any shape) then the (VOCAB, DIM) table (the model's only parameter). A row
// copy per token, tokens split across OpenMP threads. An id outside [0, VOCAB) makes the call
// fail (PyTorch raises an index error there) after the valid rows are written.
#include "kforge/kernel_abi.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kf_tensor& ids = inputs[0];
  const kf_tensor& table = inputs[1];
  kf_tensor& out = outputs[0];
  if (ids.dtype != KF_INT64 || table.dtype != KF_FLOAT32 || out.dtype != KF_FLOAT32) return 2;
  if (table.ndim != 2) return 3;
  const int64_t vocab = table.sizes[0], dim = table.sizes[1];
  const int64_t tokens = kf_numel(&ids);
  if (kf_numel(&out) != tokens * dim) return 3;
  const int64_t* I = static_cast<const int64_t*>(ids.data);
  const float* T = static_cast<const float*>(table.data);
  float* O = static_cast<float*>(out.data);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t id = I[t];
    if (id < 0 || id >= vocab) {
      std::memset(O + t * dim, 0, sizeof(float) * static_cast<size_t>(dim));
      bad = 1;
      continue;
    }
    std::memcpy(O + t * dim, T + id * dim, sizeof(float) * static_cast<size_t>(dim));
  }
  return bad ? 4 : 0;
}
