// The probes' error check: a failed CUDA runtime call prints the call and its error, then exits.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e = (call);                                                                       \
    if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); exit(1); } \
  } while (0)
