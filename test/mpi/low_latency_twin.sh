#!/bin/sh
# Twin of low_latency.sh: receivers that take the lines without waiting for their flags
# (DFCCL_LL_CHECK=0) read what the slots held before the peer's lines came, and test_gather_reduce
# must see it -- proof that the flags are what makes the lines' data right.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_ALLREDUCE_GATHER_BYTES=65536 DFCCL_LL_BYTES=4096 DFCCL_LL_CHECK=0 expect_failure "not the rank-order sum" \
  "without the flags the lines' data are seen wrong" "test_gather_reduce saw nothing wrong without the flags" \
  2 test/mpi/test_gather_reduce -i 3 -g 65536
