/*
 * The text of coll/dfccl's integer MCA parameters, read without Open MPI: the component registers
 * them as strings (coll_dfccl_component.c says why) and parses them here, and the fuzz target
 * test/fuzz/fuzz_mca.c links this file alone.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef COLL_DFCCL_PARAMS_PARSE_H
#define COLL_DFCCL_PARAMS_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* Decimal digits, a '-' in front at most, within [min, max]: not "abc", "12abc", " 7", "+7", "0x10"
 * or "1e3".  True with *out set; false leaves *out alone. */
bool mca_coll_dfccl_parse_int(const char* text, int min, int max, int* out);

/* What a parameter of [min, max] accepts, for its message: "an integer in [0, 100]", or "an integer
 * >= 0" where max is INT_MAX.  Returns the length snprintf gives (>= len: cut short). */
int mca_coll_dfccl_describe_int_range(int min, int max, char* buf, size_t len);

#endif
