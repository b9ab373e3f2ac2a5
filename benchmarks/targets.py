#!/usr/bin/env python3
# Issue 15 ("Faster than NCCL"): reads dfccl_bench's output (DFCCL's core API beside NCCL) and,
# optionally, mpi_allreduce_bench's (MPI calls through coll/dfccl) and out_of_order_bench's (the
# random-order program against the same program in one order), prints one side-by-side table per
# collective (out of place) and then the targets for its five collectives, one line each,
# starting with PASS, MISS or N/A (not measured), and FAIL when any result was wrong.  All-to-all
# and all-gather-v (issue 18) get their tables only: the issue sets them no target.  See README.md.
#
# Usage: python3 benchmarks/targets.py CORE_LOG [--mpi MPI_LOG] [--ooo OOO_LOG]   ('-' reads standard input)
# Exit status: 0 whatever the targets (this is a report), 1 when a log cannot be read or holds no
# table row, 2 on bad arguments.
#
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

KIB = 1024
MIB = 1024 * KIB

SMALL_MAX_BYTES = 64 * KIB  # latency targets: sizes up to this
CORE_LATENCY_TARGET_US = 7.0
COMPONENT_LATENCY_TARGET_US = 9.0
BUSBW_MIN_BYTES = 1 * MIB  # busbw >= NCCL's from this size on
BUSBW_TARGET_RATIO = 1.0
LARGE_ALLREDUCE_MIN_BYTES = 64 * MIB  # all-reduce: busbw >= 1.05x NCCL's from this size on
LARGE_ALLREDUCE_TARGET_RATIO = 1.05
OOO_SIZES = (64 * KIB, 4 * MIB)  # out-of-order cost: the random-order program at these sizes per collective
OOO_TARGET_RATIO = 1.10  # random / fixed order, time per iteration

# Column groups (time algbw busbw #wrong) of a row, in order, after the leading fields.
CORE_OUT = "DFCCL out-of-place"
CORE_IN = "DFCCL in-place"
NCCL_OUT = "NCCL out-of-place"
NCCL_IN = "NCCL in-place"
CORE_GROUPS = (CORE_OUT, CORE_IN, NCCL_OUT, NCCL_IN)
CORE_LEADING = 4  # size count type redop
COMPONENT = "component"
STAGED = "staged"
MPI_GROUPS = (COMPONENT, STAGED)
MPI_LEADING = 2  # size count (a trailing staged/component ratio is ignored)

DEFAULT_COLLECTIVE = "all-reduce"  # of rows before any title line (mpi_allreduce_bench's first format)

# Title spellings (lower case, without "mpi_" and punctuation) -> dfccl_bench's collective names.
COLLECTIVE_ALIASES = {
    "allreduce": "all-reduce",
    "allgather": "all-gather",
    "reducescatter": "reduce-scatter",
    "reducescatterblock": "reduce-scatter",
    "broadcast": "broadcast",
    "bcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "all-to-all",
    "allgatherv": "all-gather-v",
}
COLLECTIVE_ORDER = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all", "all-gather-v")
# The collectives issue 15 sets targets for; the others are reported as tables only.
TARGET_COLLECTIVES = COLLECTIVE_ORDER[:5]


# out_of_order_bench's rows: size, fixed median and min, random median and min (us per iteration),
# random/fixed, preemptions and daemon launches per iteration in fixed and random order, wrong elements.
OOO_FIELDS = 11


class LogError(Exception):
    """A log that cannot be read or holds no table row."""


@dataclass
class Measurement:
    time_us: Optional[float]
    busbw: Optional[float]
    wrong: Optional[int]


@dataclass
class Table:
    collective: str  # dfccl_bench's name, e.g. "all-reduce"
    title: str  # as printed, e.g. "broadcast, root 0"
    rows: Dict[int, Dict[str, Measurement]] = field(default_factory=dict)  # size -> group -> measurement

    def measurement(self, size: int, group: str) -> Optional[Measurement]:
        m = self.rows.get(size, {}).get(group)
        return m if m is not None and m.time_us is not None else None


@dataclass
class OrderCost:
    """One size of out_of_order_bench: medians over its rounds."""

    fixed_us: float
    random_us: float
    wrong: int


@dataclass
class OooLog:
    path: str
    header: str = ""  # its '# out_of_order_bench: ...' line
    sizes: Dict[int, OrderCost] = field(default_factory=dict)


@dataclass
class Log:
    path: str
    header: Dict[str, str] = field(default_factory=dict)  # program, date, nranks, device
    tables: Dict[str, Table] = field(default_factory=dict)  # by collective, in order of appearance
    skipped: List[str] = field(default_factory=list)  # lines that began like a row but were not one


# ---- parsing ----


def parse_number(text: str) -> Optional[float]:
    """A number, or None for N/A, '-' and the like; ValueError for anything else."""
    if text.upper() in ("N/A", "NA", "-", "NAN"):
        return None
    return float(text)


def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def parse_groups(fields: List[str], names: Tuple[str, ...]) -> Dict[str, Measurement]:
    groups = {}
    for i, name in enumerate(names):
        chunk = fields[4 * i : 4 * i + 4]
        if len(chunk) < 4:
            break
        time_us, _algbw, busbw, wrong = (parse_number(x) for x in chunk)
        groups[name] = Measurement(time_us, busbw, None if wrong is None else int(wrong))
    return groups


def parse_row(line: str, leading: int, names: Tuple[str, ...]) -> Optional[Tuple[int, Dict[str, Measurement]]]:
    """(size, groups) of a table row, or None when the line is not one."""
    fields = line.split()
    if len(fields) < leading + 4 or not (fields[0].isdigit() and fields[1].isdigit()):
        return None
    if any(is_number(x) for x in fields[2:leading]):  # type and redop are words
        return None
    rest = fields[leading:]
    if len(rest) > 4 * len(names) + 1:  # the MPI rows' trailing ratio is the only extra field
        return None
    try:
        return int(fields[0]), parse_groups(rest, names)
    except ValueError:
        return None


def title_collective(comment: str) -> Optional[str]:
    """The collective a title line ('# all-reduce   ...', '# broadcast, root 0', '# MPI_Allreduce, float
    sum, ...') introduces, or None for any other comment line."""
    text = comment.lstrip("#").strip()
    head = re.split(r",|:|\s{2,}", text, maxsplit=1)[0].strip().lower()
    if head.startswith("mpi_"):
        head = head[4:]
    return COLLECTIVE_ALIASES.get(re.sub(r"[^a-z0-9]", "", head))


def title_text(comment: str) -> str:
    return re.split(r"\s{2,}", comment.lstrip("#").strip(), maxsplit=1)[0]


def read_header_line(comment: str, header: Dict[str, str]) -> None:
    text = comment.lstrip("#").strip()
    if "program" not in header and re.match(r"\w+_bench\b", text):
        header["program"] = text.split(":")[0].split()[0]
    elif text.startswith("Date:"):
        header.setdefault("date", text[len("Date:") :].strip())
    elif re.match(r"nranks \d+", text):
        header.setdefault("nranks", text.split()[1].rstrip(","))
    elif re.match(r"Rank +0 ", text):
        header.setdefault("device", rank_device(text))


def rank_device(text: str) -> str:
    """'Rank 0 Pid .. on HOST device 0 [0000:1b:00.0] NAME' -> 'NAME'; 'host target' as is."""
    if text.endswith("host target"):
        return "host target"
    bracket = text.rfind("]")
    name = text[bracket + 1 :].strip() if bracket >= 0 else ""
    where = re.search(r" on +(\S+) +(device +\d+)", text)  # mpi_allreduce_bench prints no device name
    return name or (f"{where.group(1)} {' '.join(where.group(2).split())}" if where else "")


def parse_log(path: str, lines: List[str], program: str, leading: int, names: Tuple[str, ...]) -> Log:
    log = Log(path)
    current: Optional[Table] = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            collective = title_collective(stripped)
            if collective is not None:
                current = log.tables.setdefault(collective, Table(collective, title_text(stripped)))
            else:
                read_header_line(stripped, log.header)
            continue
        row = parse_row(stripped, leading, names)
        if row is None:
            if stripped[:1].isdigit():
                log.skipped.append(stripped)
            continue
        if current is None:
            current = log.tables.setdefault(DEFAULT_COLLECTIVE, Table(DEFAULT_COLLECTIVE, DEFAULT_COLLECTIVE))
        size, groups = row
        current.rows[size] = groups
    log.tables = {c: t for c, t in log.tables.items() if t.rows}
    if not log.tables:
        raise LogError(f"{path}: no table row (is it {program} output?)")
    return log


def read_lines(path: str) -> List[str]:
    try:
        if path == "-":
            return sys.stdin.read().splitlines()
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError as e:
        raise LogError(f"{path}: {e.strerror}") from e


def read_core_log(path: str) -> Log:
    return parse_log(path, read_lines(path), "dfccl_bench", CORE_LEADING, CORE_GROUPS)


def read_mpi_log(path: str) -> Log:
    return parse_log(path, read_lines(path), "mpi_allreduce_bench", MPI_LEADING, MPI_GROUPS)


def parse_ooo_row(line: str) -> Optional[Tuple[int, OrderCost]]:
    fields = line.split()
    if len(fields) != OOO_FIELDS or not (fields[0].isdigit() and fields[-1].isdigit()):
        return None
    if not all(is_number(x) for x in fields):
        return None
    return int(fields[0]), OrderCost(float(fields[1]), float(fields[3]), int(fields[-1]))


def read_ooo_log(path: str) -> OooLog:
    log = OooLog(path)
    for line in read_lines(path):
        stripped = line.strip()
        if stripped.startswith("# out_of_order_bench:") and not log.header:
            log.header = stripped.lstrip("#").strip()
        row = None if stripped.startswith("#") else parse_ooo_row(stripped)
        if row is not None:
            log.sizes[row[0]] = row[1]
    if not log.sizes:
        raise LogError(f"{path}: no table row (is it out_of_order_bench output?)")
    return log


def read_logs(prog: str, core_path: str, mpi_path: Optional[str]) -> Optional[Tuple[Log, Optional[Log]]]:
    """Both logs, or None after saying on stderr, as PROG, why one cannot be read."""
    try:
        return read_core_log(core_path), (read_mpi_log(mpi_path) if mpi_path else None)
    except LogError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


def collectives(core: Log, mpi: Optional[Log]) -> List[str]:
    """The core log's collectives in its order, then any only the MPI log has."""
    names = list(core.tables)
    if mpi is not None:
        names += [c for c in mpi.tables if c not in names]
    return names


def table_of(log: Optional[Log], collective: str) -> Table:
    empty = Table(collective, collective)
    return log.tables.get(collective, empty) if log is not None else empty


# ---- formatting ----


def format_size(size: int) -> str:
    for unit, name in ((1024 * MIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} B"


def cell(value: Optional[float], width: int, digits: int = 2) -> str:
    return f"{value:{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


# ---- side-by-side table ----


def ratios(core: Optional[Measurement], nccl: Optional[Measurement]) -> Tuple[Optional[float], Optional[float]]:
    """(DFCCL/NCCL time, DFCCL/NCCL busbw).  Both from the times (same size and busbw factor, so the
    busbw ratio is NCCL time / DFCCL time, more precise than the printed busbw's two decimals)."""
    if core is None or nccl is None or not core.time_us or not nccl.time_us:
        return None, None
    return core.time_us / nccl.time_us, nccl.time_us / core.time_us


def print_table(collective: str, core: Table, mpi: Optional[Table]) -> None:
    title = core.title if core.rows else collective
    print(f"== {title}: out of place, us per call on the slowest rank, busbw in GB/s")
    heading = f"#{'size (B)':>11} {'core us':>9} {'busbw':>7}"
    if mpi is not None:
        heading += f" {'comp us':>9}"
    heading += f" {'NCCL us':>9} {'busbw':>7} {'time D/N':>9} {'busbw D/N':>9}"
    print(heading)
    sizes = set(core.rows) | (set(mpi.rows) if mpi is not None else set())
    for size in sorted(sizes):
        dfccl, nccl = core.measurement(size, CORE_OUT), core.measurement(size, NCCL_OUT)
        time_ratio, busbw_ratio = ratios(dfccl, nccl)
        line = f"{size:12d} {cell(dfccl and dfccl.time_us, 9)} {cell(dfccl and dfccl.busbw, 7)}"
        if mpi is not None:
            component = mpi.measurement(size, COMPONENT)
            line += f" {cell(component and component.time_us, 9)}"
        line += f" {cell(nccl and nccl.time_us, 9)} {cell(nccl and nccl.busbw, 7)}"
        line += f" {cell(time_ratio, 9)} {cell(busbw_ratio, 9)}"
        print(line)
    print()


# ---- targets ----


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def not_measured(what: str, why: str) -> str:
    return f"N/A   {what}: not measured ({why})"


def latency_target(what: str, table: Table, groups: Tuple[str, ...], target_us: float, why_absent: str) -> str:
    """Worst time over sizes <= 64 KiB and the given columns, against target_us."""
    worst: Optional[Tuple[float, int, str]] = None
    for size in sorted(table.rows):
        if size > SMALL_MAX_BYTES:
            continue
        for group in groups:
            m = table.measurement(size, group)
            if m is not None and (worst is None or m.time_us > worst[0]):
                worst = (m.time_us, size, group)
    if worst is None:
        return not_measured(what, why_absent)
    time_us, size, group = worst
    place = f" ({group.split()[-1]})" if len(groups) > 1 else ""
    return (
        f"{verdict(time_us <= target_us)}  {what}: worst {time_us:.2f} us at {format_size(size)}{place}; "
        f"target <= {target_us:g} us"
    )


def busbw_target(what: str, table: Table, min_bytes: int, target_ratio: float) -> str:
    """Worst DFCCL/NCCL busbw ratio, out of place, over sizes >= min_bytes, against target_ratio."""
    worst: Optional[Tuple[float, int]] = None
    for size in sorted(table.rows):
        if size < min_bytes:
            continue
        _, ratio = ratios(table.measurement(size, CORE_OUT), table.measurement(size, NCCL_OUT))
        if ratio is not None and (worst is None or ratio < worst[0]):
            worst = (ratio, size)
    if worst is None:
        has_nccl = any(table.measurement(size, NCCL_OUT) for size in table.rows)
        why = f"no size >= {format_size(min_bytes)} with both DFCCL and NCCL" if has_nccl else "no NCCL column"
        return not_measured(what, why)
    ratio, size = worst
    dfccl, nccl = table.measurement(size, CORE_OUT), table.measurement(size, NCCL_OUT)
    return (
        f"{verdict(ratio >= target_ratio)}  {what}: worst {ratio:.3f}x at {format_size(size)} "
        f"(busbw {cell(dfccl.busbw, 0)} vs NCCL {cell(nccl.busbw, 0)} GB/s); target >= {target_ratio:.2f}x"
    )


def component_absence(collective: str, mpi: Optional[Table], small: str) -> str:
    return f"no component row of {small}" if mpi is not None else f"no {collective} table in the --mpi log"


def collective_targets(collective: str, core: Table, mpi: Optional[Table], mpi_given: bool) -> List[str]:
    small = f"sizes <= {format_size(SMALL_MAX_BYTES)}"
    lines = [
        latency_target(
            f"{collective} core API latency, {small}",
            core,
            (CORE_OUT, CORE_IN),
            CORE_LATENCY_TARGET_US,
            f"no DFCCL row of {small}",
        ),
        latency_target(
            f"{collective} component (MPI) latency, {small}",
            mpi if mpi is not None else Table(collective, collective),
            (COMPONENT,),
            COMPONENT_LATENCY_TARGET_US,
            component_absence(collective, mpi, small) if mpi_given else "no --mpi log",
        ),
        busbw_target(
            f"{collective} busbw vs NCCL, out of place, sizes >= {format_size(BUSBW_MIN_BYTES)}",
            core,
            BUSBW_MIN_BYTES,
            BUSBW_TARGET_RATIO,
        ),
    ]
    if collective == "all-reduce":
        lines.append(
            busbw_target(
                f"{collective} busbw vs NCCL, out of place, sizes >= {format_size(LARGE_ALLREDUCE_MIN_BYTES)}",
                core,
                LARGE_ALLREDUCE_MIN_BYTES,
                LARGE_ALLREDUCE_TARGET_RATIO,
            )
        )
    return lines


def ooo_targets(ooo: Optional[OooLog]) -> List[str]:
    """One line per size of OOO_SIZES and per other size of the log: random/fixed order time per
    iteration (medians over rounds) against OOO_TARGET_RATIO."""
    what = "out-of-order cost, random/fixed order time per iteration"
    if ooo is None:
        return [not_measured(what, "no --ooo log")]
    lines = []
    for size in sorted(set(OOO_SIZES) | set(ooo.sizes)):
        cost = ooo.sizes.get(size)
        at = f"{what} at {format_size(size)}"
        if cost is None or not cost.fixed_us:
            lines.append(not_measured(at, "no row of that size in the --ooo log"))
            continue
        ratio = cost.random_us / cost.fixed_us
        lines.append(
            f"{verdict(ratio <= OOO_TARGET_RATIO)}  {at}: {ratio:.2f} ({cost.random_us:.2f} vs "
            f"{cost.fixed_us:.2f} us, medians); target <= {OOO_TARGET_RATIO:.2f}"
        )
    return lines


def wrong_results(logs: List[Optional[Log]]) -> List[Tuple[str, str, int, int]]:
    """(collective, column, size, wrong elements) of every measurement with wrong elements."""
    found = []
    for log in logs:
        if log is None:
            continue
        for table in log.tables.values():
            for size in sorted(table.rows):
                for group, m in table.rows[size].items():
                    if m.wrong:
                        found.append((table.collective, group, size, m.wrong))
    return found


def ooo_wrong_results(ooo: Optional[OooLog]) -> List[Tuple[str, str, int, int]]:
    sizes = ooo.sizes.items() if ooo is not None else []
    return [("out-of-order", "all-reduce", size, cost.wrong) for size, cost in sorted(sizes) if cost.wrong]


def wrong_results_line(logs: List[Optional[Log]], ooo: Optional[OooLog] = None) -> Optional[str]:
    found = wrong_results(logs) + ooo_wrong_results(ooo)
    if not found:
        return None
    total = sum(w for *_, w in found)
    shown = "; ".join(f"{c} {g} at {format_size(s)}: {w}" for c, g, s, w in found[:8])
    more = f"; and {len(found) - 8} more" if len(found) > 8 else ""
    return f"FAIL  wrong results: {total} wrong elements in {len(found)} measurement(s) ({shown}{more})"


# ---- main ----


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="targets.py",
        description="Issue 15 targets from dfccl_bench (and mpi_allreduce_bench) output; exit 0 whatever the targets.",
    )
    p.add_argument("core_log", metavar="CORE_LOG", help="dfccl_bench output ('-': standard input)")
    p.add_argument("--mpi", metavar="MPI_LOG", help="mpi_allreduce_bench output (MPI calls through coll/dfccl)")
    p.add_argument("--ooo", metavar="OOO_LOG", help="out_of_order_bench output (random vs fixed order)")
    return p.parse_args(argv)


def print_header(core: Log, mpi: Optional[Log], ooo: Optional[OooLog] = None) -> None:
    for log in (core, mpi):
        if log is None:
            continue
        h = log.header
        facts = [h.get("program", "?"), h.get("date"), h.get("nranks") and f"{h['nranks']} ranks", h.get("device")]
        print(f"# {log.path}: {', '.join(f for f in facts if f)}")
        if log.skipped:
            print(f"# {log.path}: skipped {len(log.skipped)} unreadable row(s), first: {log.skipped[0][:80]}")
    if ooo is not None:
        print(f"# {ooo.path}: {ooo.header or 'out_of_order_bench'}")
    print()


def report(core: Log, mpi: Optional[Log], ooo: Optional[OooLog] = None) -> None:
    print_header(core, mpi, ooo)
    names = collectives(core, mpi)
    for name in names:
        print_table(name, table_of(core, name), mpi and table_of(mpi, name))
    print("== issue 15 targets")
    for name in names:
        if name not in TARGET_COLLECTIVES:
            continue
        mpi_table = mpi.tables.get(name) if mpi is not None else None
        for line in collective_targets(name, table_of(core, name), mpi_table, mpi is not None):
            print(line)
    for line in ooo_targets(ooo):
        print(line)
    untargeted = [name for name in names if name not in TARGET_COLLECTIVES]
    if untargeted:
        print(f"note: {', '.join(untargeted)}: the tables above only (issue 15 sets no target for them)")
    wrong = wrong_results_line([core, mpi], ooo)
    if wrong:
        print(wrong)


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    logs = read_logs("targets.py", args.core_log, args.mpi)
    if logs is None:
        return 1
    core, mpi = logs
    try:
        ooo = read_ooo_log(args.ooo) if args.ooo else None
    except LogError as e:
        print(f"targets.py: {e}", file=sys.stderr)
        return 1
    try:
        report(core, mpi, ooo)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head: the rest is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
