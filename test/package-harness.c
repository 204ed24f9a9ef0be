/* Drives a built normgen package from C without a GPU: argument checks and selection.
 *   harness errors                  -> one line per bad call: "<case> <status> <message>"
 *   harness select OP DTYPE RESIDUAL HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC]
 *                                   -> "<variant> <path> <table>"; with DEVICE and CC the table is the
 *                                      one normgen_table_for picks for that GPU, else the current device's
 *   harness table DEVICE CC         -> "<table> <device of that table>"
 *   harness current                 -> "<table> <count>": normgen_current_table (0 without a GPU)  */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "normgen.h"

static normgen_fwd_desc base(void) {
  normgen_fwd_desc d;
  memset(&d, 0, sizeof d);
  d.op = NORMGEN_RMSNORM; d.dtype = NORMGEN_BF16; d.weight_dtype = NORMGEN_BF16; d.residual_dtype = NORMGEN_NONE;
  d.x = (const void*)0x100000; d.y = (void*)0x200000; d.weight = (const void*)0x300000;
  d.rows = 8; d.hidden = 4096; d.x_stride = d.y_stride = 4096; d.eps = 1e-6f;
  return d;
}

static void report(const char* name, normgen_fwd_desc d) {
  normgen_status s = normgen_forward(&d);
  printf("%s %d %s\n", name, (int)s, normgen_last_error());
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "errors") == 0) {
    normgen_fwd_desc d;
    d = base(); d.x = NULL; report("null-x", d);
    d = base(); d.weight = NULL; report("null-weight", d);
    d = base(); d.rows = 0; report("rows-0", d);
    d = base(); d.hidden = -3; report("hidden-negative", d);
    d = base(); d.x_stride = 100; report("stride-small", d);
    d = base(); d.weight_offset = 1; report("unsupported-spec", d);  /* (1 + w) was not tuned */
    d = base(); d.residual_dtype = NORMGEN_BF16; report("null-residual", d);
    printf("null-desc %d %s\n", (int)normgen_forward(NULL), normgen_last_error());
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "table") == 0) {
    const int t = normgen_table_for(argv[2], atoi(argv[3]));
    printf("%d %s\n", t, normgen_table_device(t));
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "current") == 0) {
    printf("%d %d\n", normgen_current_table(), normgen_table_count());
    return 0;
  }
  if ((argc == 9 || argc == 11) && strcmp(argv[1], "select") == 0) {
    normgen_fwd_desc d = base();
    d.op = strcmp(argv[2], "layernorm") == 0 ? NORMGEN_LAYERNORM : NORMGEN_RMSNORM;
    d.dtype = strcmp(argv[3], "fp32") == 0 ? NORMGEN_FP32 : NORMGEN_BF16;
    d.weight_dtype = d.dtype;
    d.has_bias = d.op == NORMGEN_LAYERNORM;
    if (strcmp(argv[4], "same") == 0) {
      d.residual_dtype = d.dtype;
      d.residual = (const void*)0x400000; d.residual_out = (void*)0x500000;
    }
    if (d.has_bias) d.bias = (const void*)0x600000;
    d.hidden = atoll(argv[5]); d.rows = atoll(argv[6]);
    d.x_stride = d.y_stride = d.residual_stride = d.residual_out_stride = atoll(argv[7]);
    d.x = (const void*)(uintptr_t)(0x100000 + atoi(argv[8]) % 16);
    int path = -1;
    const int table = argc == 11 ? normgen_table_for(argv[9], atoi(argv[10])) : normgen_current_table();
    int v = argc == 11 ? normgen_select_in(&d, table, &path) : normgen_select(&d, &path);
    printf("%d %d %d\n", v, path, table);
    return 0;
  }
  fprintf(stderr, "usage: harness errors | select OP DTYPE RESIDUAL HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC] | table DEVICE CC | current\n");
  return 2;
}
