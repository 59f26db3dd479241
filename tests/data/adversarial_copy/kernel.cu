// copy_only: the right answer by one cudaMemcpyAsync (device to device) on the judge's stream,
// and nothing else. Honest: it does the reference's own work (x.clone() is a device copy), so
// its speedup is about 1. The question it asks: can a copy engine carry the copy out while the
// judge's lead-in kernel holds the GPU's compute engine, before the judge's clock starts?
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const size_t bytes = static_cast<size_t>(kf_numel(&outputs[0])) * sizeof(float);
  return cudaMemcpyAsync(outputs[0].data, inputs[0].data, bytes, cudaMemcpyDeviceToDevice,
                         static_cast<cudaStream_t>(stream)) == cudaSuccess
             ? 0
             : 2;
}
