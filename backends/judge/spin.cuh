// backends/judge/spin.cuh — the judge's lead-in spin as device code (internal to kforge-runner):
// lead_in.cu's kernel runs it, and the context-overlap probe (tests/data/context_overlap/
// probe.cu, the [.gpu] case "kernels of two CUDA contexts never run at once") runs the very
// same loop, so the probe tests what the judge relies on. Header-only CUDA; no state.
#pragma once

namespace kforge::runner {

/// The GPU's global timer (%globaltimer, ns), the clock every timed batch is read on.
__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// One thread's spin: sets *started (mapped host memory, seen by the host once it runs), then
/// reads the global timer until `ns` have passed since its first reading. *first and *last are
/// the first and last readings, *gap the largest between two consecutive ones (the timer's tick
/// when the spin ran alone; more when time-slicing let another context run in between).
__device__ __forceinline__ void spin_for(unsigned long long ns, volatile unsigned int* started,
                                         unsigned long long* first, unsigned long long* last,
                                         unsigned long long* gap) {
  *started = 1;
  __threadfence_system();
  const unsigned long long start = global_timer();
  unsigned long long prev = start, now = start, largest = 0;
  do {
    now = global_timer();
    if (now - prev > largest) largest = now - prev;
    prev = now;
  } while (now - start < ns);
  *first = start;
  *last = now;
  *gap = largest;
}

}  // namespace kforge::runner
