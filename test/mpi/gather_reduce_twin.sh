#!/bin/sh
# Twin of gather_reduce.sh: with the gathering off the ring adds in another order, and
# test_gather_reduce's bitwise check must see it -- proof that it tells the algorithms apart.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_ALLREDUCE_GATHER_BYTES=0 expect_failure "not the rank-order sum" "the ring's sums are seen to differ" \
  "test_gather_reduce did not tell the ring from the gathering" 3 test/mpi/test_gather_reduce -i 1 -g 65536
