// optimizer/adamw_step, cpu backend: one fused pass of the AdamW update (torch.optim.AdamW
// semantics, hyperparameters of the task: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
// weight_decay 0.01, step 10). Reads param, grad, exp_avg, exp_avg_sq once and writes the
// three updated buffers once, instead of the reference's dozen full-size temporaries.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 4 || n_outputs != 3) return 1;
  const int64_t n = kf_numel(&inputs[0]);
  for (int i = 0; i < 4; ++i)
    if (inputs[i].dtype != KF_FLOAT32 || kf_numel(&inputs[i]) != n) return 2;
  for (int i = 0; i < 3; ++i)
    if (outputs[i].dtype != KF_FLOAT32 || kf_numel(&outputs[i]) != n) return 2;
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.01;
  const int step = 10;
  const float decay = static_cast<float>(1.0 - lr * wd);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, step)));
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, step)));
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  const float c1 = static_cast<float>(1.0 - beta1), c2 = static_cast<float>(1.0 - beta2);
  const float fe = static_cast<float>(eps);

  const float* p = static_cast<const float*>(inputs[0].data);
  const float* g = static_cast<const float*>(inputs[1].data);
  const float* m = static_cast<const float*>(inputs[2].data);
  const float* v = static_cast<const float*>(inputs[3].data);
  float* po = static_cast<float*>(outputs[0].data);
  float* mo = static_cast<float*>(outputs[1].data);
  float* vo = static_cast<float*>(outputs[2].data);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = b1 * m[i] + c1 * gi;
    const float vi = b2 * v[i] + c2 * gi * gi;
    const float denom = std::sqrt(vi) * inv_sqrt_bc2 + fe;
    po[i] = p[i] * decay - step_size * (mi / denom);
    mo[i] = mi;
    vo[i] = vi;
  }
  return 0;
}
