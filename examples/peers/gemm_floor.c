// The GEMMs of one step of the default MLP trainer (batch 64, 64-512-512-10),
// as tide and PyTorch both call them, on OpenBLAS with one thread: the floor
// under either trainer's step on a CPU. Build and run:
//   gcc -O2 -o /tmp/gemm_floor examples/peers/gemm_floor.c -lopenblas
//   OPENBLAS_NUM_THREADS=1 /tmp/gemm_floor
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }
int main(void) {
  const int n = 64, L = 3, ins[3] = {64, 512, 512}, outs[3] = {512, 512, 10};
  float *dx = calloc(64 * 512, 4), *x = calloc(64 * 512, 4), *w = calloc(512 * 512, 4), *y = calloc(64 * 512, 4), *dw = calloc(512 * 512, 4);
  for (int i = 0; i < 64 * 512; ++i) x[i] = (i % 7) * 0.1f;
  for (int i = 0; i < 512 * 512; ++i) w[i] = (i % 5) * 0.1f;
  enum { R = 31, S = 200 };
  double med[R];
  for (int r = 0; r < R; ++r) {
    double t0 = now();
    for (int s = 0; s < S; ++s)
      for (int l = 0; l < L; ++l) {
        int in = ins[l], out = outs[l];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.f, x, in, w, in, 0.f, y, out);   // forward
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.f, y, out, x, in, 0.f, dw, in);  // dW
        if (l > 0) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.f, y, out, w, in, 0.f, dx, in);  // dX
      }
    med[r] = (now() - t0) / S;
  }
  qsort(med, R, sizeof med[0], cmp);
  double flops = 0;
  for (int l = 0; l < L; ++l) flops += 2.0 * n * ins[l] * outs[l] * (l > 0 ? 3 : 2);
  printf("{\"gemm_us_per_step_median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"mflop_per_step\": %.2f, \"gflops\": %.1f}\n",
         med[R / 2] * 1e6, med[0] * 1e6, med[R - 1] * 1e6, flops / 1e6, flops / med[R / 2] / 1e9);
  return 0;
}
