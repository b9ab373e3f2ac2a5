#!/bin/sh
# Runs an MPI test program on NP ranks of this machine, oversubscribed (CI machines have 2 cores).
# Usage: mpirun.sh NP PROGRAM [ARGS...]     Honors MPIRUN and DFCCL_TARGET (default: host).
np=$1
shift
: "${MPIRUN:=mpirun}"
: "${DFCCL_TARGET:=host}"
export DFCCL_TARGET
# Root is allowed in CI containers; shared memory without ptrace-based single copy works there.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export NCCL_NVLS_ENABLE=0
exec $MPIRUN -np "$np" "$@"
