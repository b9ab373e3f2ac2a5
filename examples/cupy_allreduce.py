#!/usr/bin/env python3
"""CuPy arrays passed straight to mpi4py collectives, routed through coll/dfccl.

    mpirun -np 2 --mca coll_dfccl_priority 90 python3 cupy_allreduce.py [iterations]
    (the component must be on Open MPI's component path: see examples/README.md, or run.sh)

mpi4py hands MPI the device pointer of a CuPy array (through DLPack or the CUDA Array
Interface), so comm.Allreduce(sendbuf, recvbuf) on CuPy arrays is a CUDA-aware MPI call, and
coll/dfccl runs it on DFCCL's GPU daemon.  Then the pattern of deadlock_free_allreduce.c:
nonblocking all-reduces on two communicators, A then B on even ranks (with a device
synchronization between them), B then A on odd ranks.  Prints OK on rank 0 when every result is
right; prints SKIP and exits 0 when mpi4py, CuPy or a GPU is missing.

Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
"""
import sys

try:  # both checked before MPI starts (importing mpi4py.MPI initializes MPI)
    import cupy
    import mpi4py
except ImportError as error:
    print(f"SKIP: {error.name} is not installed (see examples/README.md)")
    sys.exit(0)

from mpi4py import MPI

COUNT = 1 << 20  # float32 elements per all-reduce (4 MiB)


def ready():
    """Wait for what CuPy queued on its current stream.  mpi4py passes only the pointer, and
    DFCCL's daemon is not ordered after the user's streams: like any CUDA-aware MPI it reads the
    buffer when the call is made, so the kernels producing it must have finished."""
    cupy.cuda.get_current_stream().synchronize()


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        devices = 0
    if devices == 0:
        if rank == 0:
            print("SKIP: no GPU")
        return 0
    if size < 2:
        sys.exit("run on 2 or more ranks: mpirun -np 2 ...")
    if rank == 0:  # mpi4py must use the Open MPI that coll/dfccl was built for
        mpi = MPI.Get_library_version().split(",")[0]
        print(f"mpi4py {mpi4py.__version__} on {mpi}, CuPy {cupy.__version__}, {devices} GPU(s)", flush=True)

    # One GPU per process, chosen by the rank among the ranks on this node, before any
    # collective on device buffers.
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    cupy.cuda.Device(local_rank % devices).use()

    # Small integers, so float sums are exact and the checks can be exact.
    base = (cupy.arange(COUNT) % 64).astype(cupy.float32)
    ranks_sum = size * (size + 1) // 2

    # 1. A blocking all-reduce on CuPy arrays.
    send = base * (rank + 1)
    recv = cupy.empty_like(send)
    ready()
    comm.Allreduce(send, recv, op=MPI.SUM)
    wrong = int(cupy.count_nonzero(recv != base * ranks_sum))

    # 2. Two communicators over the same ranks (named for coll/dfccl's verbose output).
    comms = [comm.Dup(), comm.Dup()]
    comms[0].Set_name("example A")
    comms[1].Set_name("example B")
    sends = [cupy.empty(COUNT, cupy.float32) for _ in comms]
    recvs = [cupy.empty(COUNT, cupy.float32) for _ in comms]

    def fill(c, it):  # rank's input on communicator c in iteration it
        sends[c][:] = base * (rank + 1) + (1000 * c + it)

    def count_wrong(c, it):
        return int(cupy.count_nonzero(recvs[c] != base * ranks_sum + size * (1000 * c + it)))

    # A first blocking call on each communicator, checked like the others (not needed: a
    # nonblocking call is routed through DFCCL from its first use on).
    for c, cm in enumerate(comms):
        fill(c, 0)
        ready()
        cm.Allreduce(sends[c], recvs[c], op=MPI.SUM)
        wrong += count_wrong(c, 0)

    # 3. The disordered part: with collectives that busy-wait on the GPU (NCCL-like) even ranks'
    # A would wait for odd ranks' A, queued behind their B, which waits for even ranks' B, never
    # issued while they wait in the device synchronization.  DFCCL's daemon preempts a collective
    # that cannot progress and quits when nothing can, so every rank gets through.
    even = rank % 2 == 0
    first, second = (0, 1) if even else (1, 0)
    if rank < 2:
        sync = "device synchronize, " if even else ""
        print(f"rank {rank}: Iallreduce on {'AB'[first]}, {sync}then on {'AB'[second]}", flush=True)
    for it in range(1, iterations + 1):
        for c in range(2):
            fill(c, it)
        ready()
        requests = [comms[first].Iallreduce(sends[first], recvs[first], op=MPI.SUM)]
        if even:
            cupy.cuda.Device().synchronize()  # cudaDeviceSynchronize
        requests.append(comms[second].Iallreduce(sends[second], recvs[second], op=MPI.SUM))
        MPI.Request.Waitall(requests)
        wrong += sum(count_wrong(c, it) for c in range(2))

    wrong = comm.allreduce(wrong, op=MPI.SUM)  # a Python int: host memory, Open MPI's own path
    for cm in comms:
        cm.Free()
    if rank == 0:
        print(f"{size} ranks, {iterations} iterations of 2 Iallreduces of {COUNT} float32 on CuPy "
              f"arrays in opposite orders: {wrong} wrong elements")
        print("OK" if wrong == 0 else "FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
