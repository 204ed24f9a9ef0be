/* Drives a built normgen package from C without a GPU: argument checks and selection.
 *   harness errors                  -> one line per bad call: "<case> <status> <message>"
 *   harness select                  -> for each line of stdin, the tab-separated fields
 *                                      OP DTYPE RESIDUAL HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC]:
 *                                      "<variant> <path> <table>"; with DEVICE and CC the table is the
 *                                      one normgen_table_for picks for that GPU, else the current device's
 *                                      (one process for many lookups: each start initializes CUDA)
 *   harness select-plain            -> the same for plain launches (normgen_select_plain_in, on that
 *                                      table or the current device's), and a fourth field: 1 where
 *                                      that variant runs as its plain twin (normgen_plain_twin_in)
 *   harness select-bwd              -> the same for backward calls (normgen_select_backward_in), lines
 *                                      OP DTYPE HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC] (saved statistics
 *                                      not given; packages with a backward only)
 *   harness table DEVICE CC         -> "<table> <device of that table>"
 *   harness current                 -> "<table> <count>": normgen_current_table (0 without a GPU)
 *   harness programmatic            -> "<initial> <after off> <after on>": the settings
 *                                      normgen_set_programmatic_launch returns when turned off, on, on  */
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

static normgen_op op_of(const char* s) { return strcmp(s, "layernorm") == 0 ? NORMGEN_LAYERNORM : NORMGEN_RMSNORM; }
static normgen_dtype dtype_of(const char* s) { return strcmp(s, "fp32") == 0 ? NORMGEN_FP32 : strcmp(s, "fp16") == 0 ? NORMGEN_FP16 : NORMGEN_BF16; }

/* Mode select-plain: the plain-launch choice. */
static int g_plain = 0;

/* One selection: f = OP DTYPE RESIDUAL HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC] (n = 7 or 9). */
static void select_one(int n, char** f) {
  normgen_fwd_desc d = base();
  d.op = op_of(f[0]);
  d.dtype = dtype_of(f[1]);
  d.weight_dtype = d.dtype;
  d.has_bias = d.op == NORMGEN_LAYERNORM;
  if (strcmp(f[2], "same") == 0) {
    d.residual_dtype = d.dtype;
    d.residual = (const void*)0x400000; d.residual_out = (void*)0x500000;
  }
  if (d.has_bias) d.bias = (const void*)0x600000;
  d.hidden = atoll(f[3]); d.rows = atoll(f[4]);
  d.x_stride = d.y_stride = d.residual_stride = d.residual_out_stride = atoll(f[5]);
  d.x = (const void*)(uintptr_t)(0x100000 + atoi(f[6]) % 16);
  int path = -1;
  const int table = n == 9 ? normgen_table_for(f[7], atoi(f[8])) : normgen_current_table();
  const int v = g_plain ? normgen_select_plain_in(&d, table, &path) : n == 9 ? normgen_select_in(&d, table, &path) : normgen_select(&d, &path);
  if (g_plain) printf("%d %d %d %d\n", v, path, table, normgen_plain_twin_in(&d, table));
  else printf("%d %d %d\n", v, path, table);
}

#ifdef NORMGEN_HAS_BACKWARD
/* One backward selection: f = OP DTYPE HIDDEN ROWS STRIDE ALIGN_BYTES [DEVICE CC] (n = 6 or 8). */
static void select_bwd_one(int n, char** f) {
  normgen_bwd_desc d;
  memset(&d, 0, sizeof d);
  d.op = op_of(f[0]);
  d.dtype = dtype_of(f[1]);
  d.weight_dtype = d.dtype; d.residual_dtype = NORMGEN_NONE;
  d.has_bias = d.op == NORMGEN_LAYERNORM;
  d.x = (const void*)(uintptr_t)(0x100000 + atoi(f[5]) % 16);
  d.dy = (const void*)0x200000; d.weight = (const void*)0x300000;
  d.dx = (void*)0x400000; d.dweight = (void*)0x500000;
  if (d.has_bias) d.dbias = (void*)0x600000;
  d.hidden = atoll(f[2]); d.rows = atoll(f[3]);
  d.x_stride = d.dy_stride = d.dx_stride = atoll(f[4]);
  d.eps = 1e-5f;
  int path = -1;
  const int table = n == 8 ? normgen_table_for(f[6], atoi(f[7])) : normgen_current_table();
  const int v = normgen_select_backward_in(&d, table, &path);
  printf("%d %d %d\n", v, path, table);
}
#endif

/* Each line of stdin split at tabs into f; one selection per line of `count` or `count + 2` fields. */
static int answer_lines(int count, void (*one)(int, char**)) {
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    char* f[10];
    int n = 0;
    for (char* t = strtok(line, "\t\n"); t && n < 10; t = strtok(NULL, "\t\n")) f[n++] = t;
    if (n != count && n != count + 2) { fprintf(stderr, "%d or %d tab-separated fields a line, got %d\n", count, count + 2, n); return 2; }
    one(n, f);
  }
  return 0;
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
  if (argc == 2 && strcmp(argv[1], "programmatic") == 0) {
    const int initial = normgen_set_programmatic_launch(0);
    const int off = normgen_set_programmatic_launch(1);
    printf("%d %d %d\n", initial, off, normgen_set_programmatic_launch(1));
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "select") == 0) return answer_lines(7, select_one);
  if (argc == 2 && strcmp(argv[1], "select-plain") == 0) {
    g_plain = 1;
    return answer_lines(7, select_one);
  }
#ifdef NORMGEN_HAS_BACKWARD
  if (argc == 2 && strcmp(argv[1], "select-bwd") == 0) return answer_lines(6, select_bwd_one);
#endif
  fprintf(stderr, "usage: harness errors | select | select-bwd (queries on stdin) | table DEVICE CC | current | programmatic\n");
  return 2;
}
