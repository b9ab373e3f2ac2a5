/*
 * Strict command-line options for DFCCL's tests, benchmarks and tools.  A value is taken whole or
 * not at all; anything else -- a malformed or out-of-range value, an unknown option, a missing
 * value, a stray argument -- ends the program with exit status 2 and one line that names the
 * option, what was given and what is accepted:
 *
 *     test_random_order: -i: expected an integer in [1, 1000000], got 'abc'
 *
 *   options o = options_begin("prog", "usage: prog [-i N] [-q]", argc, argv, "i:q");
 *   for (int opt; (opt = options_next(&o)) != -1;) {
 *     if (opt == 'i') iterations = option_int(&o, 1, 1000000);
 *     else if (opt == 'q') quiet = true;
 *   }
 *
 * MPI programs read their options after MPI_Init through mpi_options.h, so that one rank reports
 * and every rank leaves MPI cleanly.  The parse_* functions check text alone (no message).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_OPTIONS_H
#define DFCCL_TEST_OPTIONS_H

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- text to numbers: digits first (no blank, no sign where none is wanted), nothing after ---- */

static inline bool starts_with_digit(const char* s) { return s != NULL && isdigit((unsigned char)s[0]); }

/* A decimal integer in [lo, hi]. */
static inline bool parse_long(const char* s, long lo, long hi, long* out) {
  if (!starts_with_digit(s != NULL && s[0] == '-' ? s + 1 : s)) return false;
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* A non-negative integer, decimal or 0x hexadecimal (seeds). */
static inline bool parse_unsigned(const char* s, unsigned long* out) {
  if (!starts_with_digit(s)) return false;
  char* end = NULL;
  errno = 0;
  bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  unsigned long v = strtoul(s, &end, hex ? 16 : 10); /* not base 0: "010" is ten, not octal */
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

/* A number >= lo ("0.5", "2", "1e-3"). */
static inline bool parse_double(const char* s, double lo, double* out) {
  if (!starts_with_digit(s != NULL && s[0] == '.' ? s + 1 : s)) return false;
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !(v >= lo)) return false;
  *out = v;
  return true;
}

/* Bytes: "64", "1K", "16M", "2G" (powers of 1024; a trailing "B" is allowed). */
static inline bool parse_bytes(const char* s, size_t* out) {
  if (!starts_with_digit(s)) return false;
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return false;
  unsigned long long mult = 1;
  /* clang-format off */
  switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: break;
  }
  /* clang-format on */
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || (v != 0 && mult > (unsigned long long)SIZE_MAX / v)) return false;
  *out = (size_t)(v * mult);
  return true;
}

/* ---- options ---- */

typedef struct {
  const char* program; /* the first word of every message                      */
  const char* usage;   /* printed under a message (NULL: nothing)              */
  int argc;
  char** argv;
  char spec[64];                  /* getopt's, with ':' in front (a missing value is ':') */
  bool report;                    /* print messages (MPI: rank 0 only)                    */
  void (*before_exit)(void* arg); /* runs before exit(2), e.g. MPI_Finalize (NULL: none)   */
  void* arg;
  int opt; /* the option just read, and its value                  */
  const char* value;
} options;

static inline options options_begin(const char* program, const char* usage, int argc, char** argv, const char* spec) {
  options o;
  memset(&o, 0, sizeof o);
  o.program = program;
  o.usage = usage;
  o.argc = argc;
  o.argv = argv;
  snprintf(o.spec, sizeof o.spec, ":%s", spec);
  o.report = true;
  optind = 1;
  opterr = 0;
  return o;
}

/* Says what is wrong ("<program>: ..." and the usage line), and exits with 2.  One write: under
 * mpirun, a line written in pieces can come out with mpirun's own messages between them. */
__attribute__((format(printf, 2, 3), noreturn)) static inline void options_fail(const options* o, const char* fmt,
                                                                                ...) {
  if (o->report) {
    char what[768], text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "%s: %s\n%s%s", o->program, what, o->usage ? o->usage : "", o->usage ? "\n" : "");
    fputs(text, stderr);
    fflush(stderr);
  }
  if (o->before_exit != NULL) o->before_exit(o->arg);
  exit(2);
}

/* The next option (its value in o->value), or -1 once they are all read; an unknown option, a
 * missing value or an argument that is no option ends the program. */
static inline int options_next(options* o) {
  int opt = getopt(o->argc, o->argv, o->spec);
  if (opt == '?') options_fail(o, "unknown option -%c", optopt);
  if (opt == ':') options_fail(o, "-%c needs a value", optopt);
  if (opt == -1 && optind < o->argc) options_fail(o, "unexpected argument '%s'", o->argv[optind]);
  o->opt = opt;
  o->value = optarg;
  return opt;
}

/* For a program without options: any argument ends it. */
static inline void options_none(options o) {
  while (options_next(&o) != -1) continue;
}

static inline int option_int(const options* o, int lo, int hi) {
  long v = 0;
  if (!parse_long(o->value, lo, hi, &v))
    options_fail(o, "-%c: expected an integer in [%d, %d], got '%s'", o->opt, lo, hi, o->value);
  return (int)v;
}

static inline long option_long(const options* o, long lo, long hi) {
  long v = 0;
  if (!parse_long(o->value, lo, hi, &v))
    options_fail(o, "-%c: expected an integer in [%ld, %ld], got '%s'", o->opt, lo, hi, o->value);
  return v;
}

static inline unsigned long option_unsigned(const options* o) {
  unsigned long v = 0;
  if (!parse_unsigned(o->value, &v))
    options_fail(o, "-%c: expected a non-negative integer (decimal or 0x...), got '%s'", o->opt, o->value);
  return v;
}

static inline double option_double(const options* o, double lo) {
  double v = 0;
  if (!parse_double(o->value, lo, &v)) options_fail(o, "-%c: expected a number >= %g, got '%s'", o->opt, lo, o->value);
  return v;
}

static inline size_t option_bytes(const options* o) {
  size_t v = 0;
  if (!parse_bytes(o->value, &v))
    options_fail(o, "-%c: expected a size in bytes (64, 1K, 16M, 2G), got '%s'", o->opt, o->value);
  return v;
}

/* The index of the value among `choices` (NULL-terminated). */
static inline int option_choice(const options* o, const char* const* choices) {
  char accepted[256] = "";
  for (int i = 0; choices[i] != NULL; i++) {
    if (strcmp(o->value, choices[i]) == 0) return i;
    size_t used = strlen(accepted);
    snprintf(accepted + used, sizeof accepted - used, "%s%s", i > 0 ? ", " : "", choices[i]);
  }
  options_fail(o, "-%c: expected one of %s, got '%s'", o->opt, accepted, o->value);
}

/* DFCCL_TARGET as dfcclInit reads it, checked before anything touches CUDA: true for the GPU
 * ("cuda" or unset), false for "host"; any other value ends the program (o says whose). */
static inline bool option_env_target_is_gpu(const options* o) {
  const char* target = getenv("DFCCL_TARGET");
  bool gpu = target == NULL || *target == '\0' || strcmp(target, "cuda") == 0;
  if (!gpu && strcmp(target, "host") != 0)
    options_fail(o, "DFCCL_TARGET is '%s': expected 'cuda' or 'host' (unset: cuda)", target);
  return gpu;
}

#endif /* DFCCL_TEST_OPTIONS_H */
