/*
 * Parsing coll/dfccl's integer MCA parameters (coll_dfccl_params_parse.h): no Open MPI here.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl_params_parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

bool mca_coll_dfccl_parse_int(const char* text, int min, int max, int* out) {
  if (text == NULL) return false;
  /* strtol would also skip leading spaces and take a '+' or "0x" (base 0): the first character after
   * the sign must be a digit. */
  const char* digits = text[0] == '-' ? text + 1 : text;
  if (!isdigit((unsigned char)digits[0])) return false;
  errno = 0;
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = (int)v;
  return true;
}

int mca_coll_dfccl_describe_int_range(int min, int max, char* buf, size_t len) {
  if (max == INT_MAX) return snprintf(buf, len, "an integer >= %d", min);
  return snprintf(buf, len, "an integer in [%d, %d]", min, max);
}
