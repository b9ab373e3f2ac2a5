#!/usr/bin/env python3
"""Every collective that coll/dfccl routes, called from mpi4py on CuPy arrays, checked exactly.

    mpirun -np N --mca coll_dfccl_priority 90 python3 cupy_collectives.py [options]
    (the component on Open MPI's component path: see cupy_collectives.sh, which runs this)

With CuPy arrays (device buffers) of float32, float64 and int32 and counts 1, 1000 and 1<<20
(per rank for Allgather and the reduce-scatters): Allreduce (SUM, MAX), Bcast, Reduce (SUM),
Allgather, Reduce_scatter_block and Reduce_scatter with equal counts (SUM), with MPI.IN_PLACE
wherever MPI allows it (Allreduce, Reduce at the root, Allgather, both reduce-scatters), roots 0 and
last; first blocking (each call sets its signature up), then the nonblocking forms (Iallreduce,
...) of the same calls all in flight at once, twice (the second pass after a Barrier, which grows
the signatures' pools).  Every result is copied back and compared exactly with NumPy's.

The inputs are made by CuPy kernels on CuPy's current stream (the legacy default stream, or the
per-thread one with CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1) and handed to MPI WITHOUT any
synchronization: a CUDA-aware MPI orders its work after the calling thread's default stream, so
must coll/dfccl.

All calls are made on a duplicate of COMM_WORLD named 'cupy collectives'.  Rank 0 prints
"calls: N per rank on comm 'cupy collectives'" (cupy_collectives.sh checks, from coll_dfccl_verbose
10, that all of them started on DFCCL) and last "PASS: N calls, 0 wrong" or "FAIL: K wrong of N"
(K calls wrong on some rank); each rank prints its first mismatches.  Exit status 1 on failure;
"SKIP: ..." and 0 without mpi4py, CuPy or a GPU.  --host runs the same on NumPy arrays (host
memory), for checking this script where there is no GPU, in coll/dfccl's host-target test mode.

Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
"""
import argparse
import faulthandler
import sys


def positive_ints(text):
    try:
        values = [int(v, 10) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be >= 1: {text!r}")
    return values


def positive_int(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--counts", type=positive_ints, default=[1, 1000, 1 << 20],
                    help="element counts, comma-separated (default 1,1000,1048576)")
parser.add_argument("--passes", type=positive_int, default=1,
                    help="times the whole set is run, with new values each time (default 1)")
parser.add_argument("--watchdog", type=positive_int, default=300,
                    help="seconds without a completed call before the process dumps its stack and exits")
parser.add_argument("--host", action="store_true",
                    help="NumPy arrays in host memory instead of CuPy (coll_dfccl_host_target mode, no GPU)")
args = parser.parse_args()  # before MPI starts: a bad option ends every rank alike

try:  # checked before MPI starts (importing mpi4py.MPI initializes MPI)
    import numpy as np
    import mpi4py
    xp = np if args.host else __import__("cupy")
except ImportError as error:
    print(f"SKIP: {error.name} is not installed (see examples/README.md)")
    sys.exit(0)

from mpi4py import MPI

DTYPES = [(np.float32, MPI.FLOAT), (np.float64, MPI.DOUBLE), (np.int32, MPI.INT)]
SENTINEL = -77  # what receive buffers hold before a call, where no input goes
MISMATCH_LINES = 5  # per rank
mismatches = 0  # calls with a wrong result on this rank
dup = None  # the communicator of the calls

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def to_host(a):
    return a if args.host else xp.asnumpy(a)


def values(lib, r, n, salt, dtype):
    """Rank r's n input elements: small integers, exact in every dtype and in their sums."""
    i = lib.arange(n, dtype=lib.int64)
    return ((i * 31 + r * 17 + salt * 7) % 11 - 5).astype(dtype)


def reduced(op, n, salt, dtype):
    """The reduction over all ranks of their inputs, by NumPy."""
    stack = np.stack([values(np, r, n, salt, dtype) for r in range(size)])
    return (stack.sum(axis=0) if op == MPI.SUM else stack.max(axis=0)).astype(dtype)


class Call:
    """One collective call on device arrays: its inputs (made by kernels, not waited for), its
    issue, blocking or not, and the check of its result."""

    def __init__(self, coll, dtype, mpitype, n, op=MPI.SUM, root=None, in_place=False):
        self.coll, self.dtype, self.mpitype, self.n = coll, dtype, mpitype, n
        self.op, self.root, self.in_place = op, root, in_place

    def describe(self):
        op = {MPI.SUM: "SUM", MPI.MAX: "MAX"}[self.op] if self.coll in ("Allreduce", "Reduce", "Reduce_scatter_block",
                                                                        "Reduce_scatter") else None
        parts = [self.coll, np.dtype(self.dtype).name, f"count {self.n}"]
        parts += [op] if op else []
        parts += [f"root {self.root}"] if self.root is not None else []
        parts += ["in place"] if self.in_place else []
        return " ".join(parts)

    def fill(self, salt):
        """This rank's buffers for the call, made on the current stream and not waited for."""
        n, dtype = self.n, self.dtype
        self.salt = salt
        self.send, self.recv = None, None
        mine = values(xp, rank, n * size if self.coll.startswith("Reduce_scatter") else n, salt, dtype)
        if self.coll == "Bcast":
            self.recv = mine if rank == self.root else xp.full(n, SENTINEL, dtype)
        elif self.coll == "Allgather":
            self.recv = xp.full(n * size, SENTINEL, dtype)
            if self.in_place:
                self.recv[rank * n:(rank + 1) * n] = mine
            else:
                self.send = mine
        elif self.coll == "Reduce" and rank != self.root:
            self.send = mine  # recvbuf is not significant here: None
        elif self.in_place:
            self.recv = mine
        else:
            self.send = mine
            self.recv = xp.full(n, SENTINEL, dtype)

    def issue(self, nonblocking):
        """The MPI call; its request when nonblocking."""
        t = self.mpitype
        send = MPI.IN_PLACE if self.send is None else [self.send, t]
        recv = None if self.recv is None else [self.recv, t]
        call = getattr(dup, "I" + self.coll.lower() if nonblocking else self.coll)  # Allreduce, Iallreduce, ...
        if self.coll == "Bcast":
            return call(recv, root=self.root)
        if self.coll == "Reduce":
            return call(send, recv, op=self.op, root=self.root)
        if self.coll == "Allgather":
            return call(send, recv)
        if self.coll == "Reduce_scatter_block":
            if self.in_place:  # the count per rank, stated: mpi4py versions infer it differently here
                recv = [self.recv, self.n, t]
            return call(send, recv, op=self.op)
        if self.coll == "Reduce_scatter":
            return call(send, recv, [self.n] * size, op=self.op)
        return call(send, recv, op=self.op)

    def expected(self):
        """The result on this rank by NumPy (None where MPI defines none: a non-root of Reduce)."""
        n, dtype, salt = self.n, self.dtype, self.salt
        if self.coll == "Bcast":
            return values(np, self.root, n, salt, dtype)
        if self.coll == "Allgather":
            return np.concatenate([values(np, r, n, salt, dtype) for r in range(size)])
        if self.coll == "Reduce":
            return reduced(self.op, n, salt, dtype) if rank == self.root else None
        if self.coll == "Allreduce":
            return reduced(self.op, n, salt, dtype)
        return reduced(self.op, n * size, salt, dtype)[rank * n:(rank + 1) * n]  # both reduce-scatters

    def check(self, where):
        """The number of wrong elements of this rank's result (the first few calls' printed)."""
        want = self.expected()
        if want is None:
            return 0
        got = to_host(self.recv)[:len(want)]  # in-place reduce-scatters: the first n elements
        wrong = np.flatnonzero(got != want)
        if len(wrong) > 0:
            global mismatches
            mismatches += 1
            if mismatches <= MISMATCH_LINES:
                i = int(wrong[0])
                print(f"rank {rank}: wrong: {where}, {self.describe()}: [{i}] = {got[i]}, expected {want[i]} "
                      f"({len(wrong)} of {len(want)} elements wrong)", flush=True)
        return len(wrong)


def calls(counts):
    """Every routed collective, both buffer layouts where MPI allows MPI_IN_PLACE, roots 0 and last."""
    last, out = size - 1, []
    for dtype, mpitype in DTYPES:
        for n in counts:
            def call(coll, **kw):
                out.append(Call(coll, dtype, mpitype, n, **kw))
            for in_place in (False, True):
                call("Allreduce", in_place=in_place)
                call("Allgather", in_place=in_place)
                call("Reduce_scatter_block", in_place=in_place)
                call("Reduce_scatter", in_place=in_place)
                for root in (0, last):
                    call("Reduce", root=root, in_place=in_place)
            call("Allreduce", op=MPI.MAX)
            for root in (0, last):
                call("Bcast", root=root)
    return out


def main():
    global dup
    if not args.host:
        try:
            devices = xp.cuda.runtime.getDeviceCount()
        except xp.cuda.runtime.CUDARuntimeError:
            devices = 0
        if devices == 0:
            if rank == 0:
                print("SKIP: no GPU")
            return 0
    if size < 2:
        if rank == 0:
            print("run on 2 or more ranks: coll/dfccl routes communicators of 2 or more", file=sys.stderr)
        return 2
    if not args.host:  # one GPU per process, chosen before any collective on device buffers
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank = node.Get_rank()
        node.Free()
        xp.cuda.Device(local_rank % devices).use()
    if rank == 0:
        mpi = MPI.Get_library_version().split(",")[0].strip()
        arrays = "NumPy (host)" if args.host else f"CuPy {xp.__version__}, {devices} GPU(s)"
        print(f"mpi4py {mpi4py.__version__} on {mpi}, {arrays}, {size} ranks", flush=True)

    dup = comm.Dup()
    dup.Set_name("cupy collectives")
    todo = calls(args.counts)
    per_pass = len(todo)
    wrong_at = []  # per call: wrong on this rank
    for p in range(args.passes):
        # Blocking, one at a time: each sets its signature up (registers it with DFCCL).
        for c in todo:
            c.fill(len(wrong_at))
            c.issue(nonblocking=False)
            wrong_at.append(c.check(f"pass {p}, blocking") > 0)
            faulthandler.dump_traceback_later(args.watchdog, exit=True)
        # Nonblocking, all in flight, twice: the Barrier grows the pools the first batch asked for.
        for batch in range(2):
            if batch:
                dup.Barrier()
            for k, c in enumerate(todo):
                c.fill(len(wrong_at) + k)
            requests = [c.issue(nonblocking=True) for c in todo]
            MPI.Request.Waitall(requests)
            wrong_at += [c.check(f"pass {p}, nonblocking batch {batch}") > 0 for c in todo]
            faulthandler.dump_traceback_later(args.watchdog, exit=True)
    faulthandler.cancel_dump_traceback_later()

    # A call is wrong when it is wrong on some rank (host memory: Open MPI's own path).
    wrong_any = np.array(wrong_at, dtype=np.uint8)
    comm.Allreduce(MPI.IN_PLACE, [wrong_any, MPI.UNSIGNED_CHAR], op=MPI.MAX)
    total, wrong = len(wrong_at), int(wrong_any.sum())
    dup.Free()
    if rank == 0:
        print(f"calls: {total} per rank on comm 'cupy collectives' ({per_pass} shapes, blocking then 2 nonblocking "
              f"batches, {args.passes} pass(es))")
        print(f"PASS: {total} calls, 0 wrong" if wrong == 0 else f"FAIL: {wrong} wrong of {total}", flush=True)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    sys.exit(main())
