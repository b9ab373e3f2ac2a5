#!/usr/bin/env python3
# Where the iterations of the random-order program spend their time: reads the event traces that a
# stamps build (./configure --enable-stamps) writes with DFCCL_TRACE_FILE=PREFIX (PREFIX.0,
# PREFIX.1, ...: daemon block 0's events, core/kernel/stamps.h) while out_of_order_bench runs, and
# prints, for the iterations in one order on every rank (fixed) and those in each rank's own order
# (random), medians over iterations of:
#   - the iteration's time on each rank (its first run taken to its last CQE) and what it held: runs
#     scheduled, waits that left for another run (sent ahead / for a slot / for the SQ), waits that
#     gave up at their threshold, gates still shut;
#   - that time split by the event that ended each stretch of it: the wait before "received" is
#     waiting for the peer's data, the stretch before "leave" a wait that left, before "run" the
#     scheduler's switch to the run, before "sent" the send's copy and fence, and so on;
# and then one random iteration (the median one of rank 0) event by event on both ranks.
# An iteration is an epoch: every collective of the program runs once per iteration.  A run of several
# channels (4 MiB) shows only block 0's channel, and its CQE only where block 0 finished it last.
#
#   python3 benchmarks/trace_report.py PREFIX [--ranks N] [--timeline N]
#
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
import argparse
import collections
import statistics
import sys

ENDS = ["taken", "round", "run", "gate-shut", "gate", "sent", "received", "leave", "give-up", "executed", "cqe"]
MEANING = {
    "taken": "SQE intake (looks at the SQ, queue insert)",
    "round": "round start (fetch, barriers)",
    "run": "switch to a run (scheduler, context load)",
    "gate-shut": "gate polled, still shut",
    "gate": "gate polled, open",
    "sent": "send (copy to the peer, fence, tail)",
    "received": "wait that found the peer's slot",
    "leave": "wait that left for another run",
    "give-up": "wait that reached its threshold",
    "executed": "receive side (reduce, copy out)",
    "cqe": "completion (fence, CQE)",
}


def read_trace(path):
    events = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            t, name, coll, epoch, arg, arg2 = line.split()
            events.append((int(t), name, int(coll), int(epoch), int(arg), int(arg2)))
    return events


def iterations_of(events):
    """{epoch: [events]}: each event goes to the epoch of the run it names; a round (no run) to
    the epoch of the run event after it."""
    by_epoch = collections.defaultdict(list)
    pending = []
    for e in events:
        if e[1] == "round":
            pending.append(e)
            continue
        by_epoch[e[3]].extend(pending)
        pending = []
        by_epoch[e[3]].append(e)
    return by_epoch


def summarize(evs):
    """One rank's iteration: its time, counts and the time by the event that ended each stretch."""
    evs = sorted(evs)
    start = next((e[0] for e in evs if e[1] == "taken"), evs[0][0])
    # A run of several channels writes its CQE from whichever block finishes last: block 0's trace
    # has its "executed" for every run, its "cqe" for some.
    ends = [e[0] for e in evs if e[1] in ("cqe", "executed")]
    end = max(ends) if ends else evs[-1][0]
    counts = collections.Counter(e[1] for e in evs)
    leaves = collections.Counter()
    for e in evs:
        if e[1] == "leave":
            leaves["ahead" if e[5] >> 63 else ("sq" if e[4] == 0xFFFF else "slot")] += 1
    by_end = collections.Counter()
    previous = start
    for e in evs:
        if e[0] < start or e[0] > end:
            continue
        by_end[e[1]] += e[0] - previous
        previous = e[0]
    order = [e[2] for e in evs if e[1] == "taken"]
    return {"us": (end - start) / 1000.0, "counts": counts, "leaves": leaves, "by_end": by_end, "order": order,
            "start": start, "events": evs}


def median(values):
    return statistics.median(values) if values else 0.0


def main():
    p = argparse.ArgumentParser(description="Where the random-order program's iterations spend their time")
    p.add_argument("prefix", help="DFCCL_TRACE_FILE of the run: PREFIX.0, PREFIX.1, ... are read")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--timeline", type=int, default=1, help="random iterations to print event by event (0: none)")
    args = p.parse_args()

    ranks = []
    for r in range(args.ranks):
        try:
            ranks.append(iterations_of(read_trace(f"{args.prefix}.{r}")))
        except OSError as err:
            sys.exit(f"trace_report: {err}")
    epochs = sorted(set.intersection(*(set(k) for k in ranks)))
    # The first and last epochs may be cut by the ring or hold a size's registration: only those with
    # every run taken and executed (block 0's part of it) on every rank count.
    kinds = {"fixed": [], "random": []}
    for ep in epochs:
        s = [summarize(ranks[r][ep]) for r in range(args.ranks)]
        n = len(s[0]["order"])
        if n == 0 or any(len(x["order"]) != n or x["counts"]["executed"] != n for x in s):
            continue
        same = all(x["order"] == s[0]["order"] for x in s)
        kinds["fixed" if same else "random"].append((ep, s))

    print(f"# trace_report: {args.ranks} ranks, {len(kinds['fixed'])} iterations in one order (fixed), "
          f"{len(kinds['random'])} in each rank's own (random); medians over iterations; us")
    for kind, its in kinds.items():
        if not its:
            continue
        print(f"\n## {kind}: {len(its)} iterations")
        for r in range(args.ranks):
            rows = [s[r] for _, s in its]
            line = f"rank {r}: {median([x['us'] for x in rows]):8.1f} us an iteration"
            for name in ["run", "leave", "give-up", "gate-shut", "sent", "received"]:
                line += f" | {name} {median([x['counts'][name] for x in rows]):.1f}"
            line += " | leaves: " + ", ".join(f"{k} {median([x['leaves'][k] for x in rows]):.1f}"
                                              for k in ["ahead", "slot", "sq"])
            print(line)
        print("time by the event that ended each stretch (rank 0 | rank 1 ...):")
        for name in ENDS:
            cells = [median([s[r]["by_end"][name] / 1000.0 for _, s in its]) for r in range(args.ranks)]
            if max(cells) < 0.05:
                continue
            print(f"  {name:10s} " + " | ".join(f"{c:7.1f}" for c in cells) + f"   {MEANING[name]}")

    randoms = sorted(kinds["random"], key=lambda x: x[1][0]["us"])
    for ep, s in randoms[len(randoms) // 2:len(randoms) // 2 + args.timeline]:
        print(f"\n## a random iteration, epoch {ep}: each rank's events from its first run taken, us")
        for r in range(args.ranks):
            print(f"rank {r}: order taken {s[r]['order']}")
            for e in s[r]["events"]:
                if e[1] == "round" and e[4] == 0:
                    continue
                extra = ""
                if e[1] == "leave":
                    extra = ("ahead to " if e[5] >> 63 else "to ") + ("SQ" if e[4] == 0xFFFF else f"coll {e[4]}") + \
                        f" after {e[5] & ~(1 << 63)} polls"
                elif e[1] == "give-up":
                    extra = f"after {e[5]} polls"
                elif e[1] == "run":
                    extra = f"position {e[4]}, threshold {e[5]}"
                elif e[1] == "round":
                    extra = f"{e[4]} tasks, {e[5]} fetched"
                coll = "" if e[1] == "round" else f"coll {e[2]}"
                print(f"  {(e[0] - s[r]['start']) / 1000.0:8.2f}  {e[1]:9s} {coll:8s} {extra}")


if __name__ == "__main__":
    main()
