#!/bin/sh
# A later, higher-priority collective overtakes queued ones; its twin with equal priorities (FIFO)
# shows that the overtaking comes from the priorities.  The front of the queue waits long enough
# (DFCCL_SPIN_FRONT) for rank 0's submissions to arrive while its daemon waits in the gate.
. "${top_srcdir:-.}/test/mpi/common.sh"
export DFCCL_SPIN_FRONT=20000
run_mpi 2 test/mpi/test_priority && run_mpi 2 test/mpi/test_priority -f
