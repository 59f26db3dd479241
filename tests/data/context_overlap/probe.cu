// Do kernels of two CUDA contexts (two processes) run at once on this GPU? The judge's lead-in
// (backends/judge/lead_in.hpp) assumes they do not: a candidate's kernels queued while the
// judge's one-thread spin runs must wait for its end (or preempt it, which the spin sees as a
// gap in the global timer). Under MPS, or any sharing that lets contexts run side by side, they
// would run on the idle SMs during the spin, before the judge's clock starts.
//
// Each trial forks two processes. A: a 2 ms one-thread spin (the lead-in's own loop,
// backends/judge/spin.cuh), recording its first and last %globaltimer readings and its largest
// gap. B: once A's spin is running (A says so through a pipe), 8 launches of 1024 blocks writing
// 256 MiB, recording the first block's start and the last block's end. Prints one line per
// process per trial:
//   <trial> A <spin start ns> <spin end ns> <largest gap us>
//   <trial> B <work start ns> <work end ns>
// Exit status 0, or 1 when CUDA fails (the reason on stderr). Built and run by the [.gpu] case
// "kernels of two CUDA contexts never run at once" (tests/unit/test_runner.cpp).
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "spin.cuh"  // backends/judge: nvcc -I <repo>/backends/judge

namespace {

using kforge::runner::global_timer;

/// The judge's own spin (backends/judge/spin.cuh): t = {first reading, last reading, largest gap}.
__global__ void spin(unsigned long long ns, unsigned long long* t, volatile unsigned int* started) {
  kforge::runner::spin_for(ns, started, &t[0], &t[1], &t[2]);
}

__global__ void work(float* x, int n, unsigned long long* t) {
  if (threadIdx.x == 0) atomicMin(&t[0], global_timer());
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = x[i] * 1.0001f + 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&t[1], global_timer());
}

int check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return 0;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorName(e));
  _exit(1);
}

void send(int fd) {
  if (write(fd, "x", 1) != 1) _exit(1);
}

void receive(int fd) {
  char c;
  if (read(fd, &c, 1) != 1) _exit(1);
}

/// Process A: warms up, waits until B is ready, spins 2 ms and tells B once the spin runs.
void run_spin(int trial, int b_ready, int go) {
  unsigned long long* t = nullptr;
  unsigned int *started = nullptr, *started_dev = nullptr;
  check(cudaMalloc(&t, 3 * sizeof *t), "cudaMalloc");
  check(cudaHostAlloc(&started, sizeof *started, cudaHostAllocMapped), "cudaHostAlloc");
  check(cudaHostGetDevicePointer(&started_dev, started, 0), "cudaHostGetDevicePointer");
  spin<<<1, 1>>>(50'000, t, started_dev);
  check(cudaDeviceSynchronize(), "warm-up spin");
  *started = 0;
  receive(b_ready);
  spin<<<1, 1>>>(2'000'000, t, started_dev);
  while (*static_cast<volatile unsigned int*>(started) == 0) {
  }
  send(go);
  check(cudaDeviceSynchronize(), "spin");
  unsigned long long h[3];
  check(cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("%d A %llu %llu %.3f\n", trial, h[0], h[1], static_cast<double>(h[2]) / 1e3);
  std::fflush(stdout);
}

/// Process B: its context made and warm, says it is ready, then launches its work on A's word.
void run_work(int trial, int b_ready, int go) {
  constexpr int n = 1 << 26;
  float* x = nullptr;
  unsigned long long* t = nullptr;
  const unsigned long long init[2] = {~0ull, 0};
  check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
  check(cudaMemset(x, 0, n * sizeof(float)), "cudaMemset");
  check(cudaMalloc(&t, sizeof init), "cudaMalloc");
  work<<<264, 256>>>(x, 1024, t);
  check(cudaMemcpy(t, init, sizeof init, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "warm-up work");
  send(b_ready);
  receive(go);
  for (int k = 0; k < 8; ++k) work<<<1024, 256>>>(x, n, t);
  check(cudaDeviceSynchronize(), "work");
  unsigned long long h[2];
  check(cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("%d B %llu %llu\n", trial, h[0], h[1]);
  std::fflush(stdout);
}

}  // namespace

int main() {
  int failed = 0;
  for (int trial = 0; trial < 5; ++trial) {
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) return 1;
    const pid_t a = fork();
    if (a == 0) run_spin(trial, ready[0], go[1]), _exit(0);
    const pid_t b = fork();
    if (b == 0) run_work(trial, ready[1], go[0]), _exit(0);
    for (pid_t p : {a, b}) {
      int status = 0;
      if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  }
  return failed;
}
