#!/bin/sh
# A later, higher-priority collective overtakes queued ones; its twin with equal priorities (FIFO)
# shows that the overtaking comes from the priorities.  The front of the queue waits long enough
# (DFCCL_SPIN_FRONT, 20000 host polls unless given: test/gpu/run.sh gives a GPU's) for rank 0's
# submissions to arrive while its daemon waits in the gate.  Both with the defaults and with waits
# that end only by their thresholds (DFCCL_LEAVE_FOR_READY=0): a wait that leaves for a run with a
# slot to take must not overtake the priorities, nor be what orders H first.  The twin runs without
# sending ahead (DFCCL_SEND_AHEAD=0): G's wait for the late rank is preempted, and a wait after a
# preemption may send equal-priority runs ahead, so that H, sent ahead by both ranks, completes
# before the Ls on one of them (CI saw it once in three runs) -- runs of equal priority are queued
# in FIFO order, not completed in it (docs/design.md, "Sending ahead").
. "${top_srcdir:-.}/test/mpi/common.sh"
: "${DFCCL_SPIN_FRONT:=20000}"
export DFCCL_SPIN_FRONT
run_mpi 2 test/mpi/test_priority && DFCCL_SEND_AHEAD=0 run_mpi 2 test/mpi/test_priority -f &&
  DFCCL_LEAVE_FOR_READY=0 run_mpi 2 test/mpi/test_priority &&
  DFCCL_LEAVE_FOR_READY=0 DFCCL_SEND_AHEAD=0 run_mpi 2 test/mpi/test_priority -f
