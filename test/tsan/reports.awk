# ThreadSanitizer's reports (its log_path files) -> those that concern DFCCL's code.
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
#
# Usage: awk -f reports.awk LOG...  Prints every report that concerns DFCCL in full, then one line
# "tsan: N reports about DFCCL's code, M set aside (uninstrumented libraries)"; exits 1 when N > 0
# (or when the runtime itself complained: a fatal error, a failed check).
#
# Open MPI, PMIx, libevent, hwloc and UCX are not instrumented: TSan sees their calls into libc
# (memcpy, free, pthread_mutex_*) but none of their own loads, stores and atomics -- not the
# synchronization that orders their accesses (an MPI request completed by an atomic on another
# thread, a wait list handed over under their locks).  So a data race is not judged when one of its
# two accesses is such a library's own (the first frame below TSan's interceptor is in it): say,
# Open MPI's progress engine unpacking a message on one thread into the buffer of an MPI call that
# another thread made and has returned from, which then reads it.  (Where two threads are inside
# Open MPI at once, tsan.sh also has TSan ignore the memory accesses of libc calls: it cannot always
# restore the stack of such an access, and an access it cannot name counts here as DFCCL's.)  A
# lock-order inversion is not judged when every acquisition in it is such a library's (Open MPI
# 4.1's ompi_sync_wait_mt takes a request's lock and its wait list's lock in both orders).  That is what TSan's own
# `called_from_lib:` suppression would do, which cannot be used here: it aborts the process when
# Open MPI unloads one of its plugins (at MPI_Finalize, or a component not selected), and it also
# ignores those libraries' mutex operations, which then yields false "double lock" reports.
# Every other report -- both accesses in DFCCL, its component, its tests or inline Open MPI code
# compiled into them (OBJ_NEW, ompi_request_complete) -- counts.

function module_of(frame, m) { # "    #2 f file:1 (libmpi.so.40+0x3a1a0)" -> "libmpi.so.40"
  if (!match(frame, /\([^() ]+\+0x[0-9a-f]+\)$/)) return ""
  m = substr(frame, RSTART + 1, RLENGTH - 2)
  sub(/\+0x[0-9a-f]+$/, "", m)
  sub(/.*\//, "", m)
  return m
}

function uninstrumented(m) {
  if (m ~ /^(mca_coll_dfccl\.so|libdfccl\.so)/) return 0 # DFCCL's own
  return m ~ /^(libmpi\.so|libopen-pal\.so|libopen-rte\.so|libmca_common_|mca_|libpmix\.so|pmix_mca_|libevent|libhwloc\.so|libuc[mpst]\.so|libuct_)/
}

function flush(   i, foreign, acc, ours) {
  if (!in_report) return
  in_report = 0
  foreign = 0
  acc = 0
  for (i = 1; i <= nsect; i++)
    if (sect_kind[i] == "access") {
      acc++
      if (uninstrumented(sect_module[i])) foreign++
    }
  if (type == "data race") ours = !(foreign > 0)
  else if (type ~ /^lock-order-inversion/) ours = !(acc > 0 && foreign == acc)
  else ours = 1
  if (ours) {
    reported++
    printf "%s", text
  } else ignored++
}

BEGIN { in_report = 0; reported = 0; ignored = 0; runtime = 0 }

/^WARNING: ThreadSanitizer: / {
  flush()
  in_report = 1
  type = $0
  sub(/^WARNING: ThreadSanitizer: /, "", type)
  sub(/ \(pid=[0-9]+\).*$/, "", type)
  text = "==================\n" FILENAME ":\n" $0 "\n"
  nsect = 0
  next
}

in_report && /^SUMMARY: ThreadSanitizer/ {
  text = text $0 "\n"
  flush()
  next
}

in_report {
  text = text $0 "\n"
  if ($0 ~ /^  [^ ]/) { # a section: an access (or a mutex acquisition), or context
    nsect++
    sect_module[nsect] = ""
    sect_kind[nsect] = ($0 ~ /^  (Previous )?([Aa]tomic )?([Rr]ead|[Ww]rite) of size/ ||
                        $0 ~ /^  Mutex M[0-9]+ (acquired here while holding|previously acquired by)/) ? "access" : "context"
    seek = 1
  } else if (nsect > 0 && seek && $0 ~ /^    #[0-9]+ /) {
    m = module_of($0)
    if (m !~ /^libtsan\.so/) { # below TSan's own interceptor frames
      sect_module[nsect] = m
      seek = 0
    }
  }
  next
}

# Outside a report: the runtime's own complaints (a fatal error, a failed check, a bad option).
/ThreadSanitizer/ && !/^ThreadSanitizer: reported [0-9]+ warnings/ && !/^==+$/ {
  runtime++
  print FILENAME ": " $0
}

END {
  flush()
  printf "tsan: %d report%s about DFCCL's code, %d set aside (uninstrumented libraries)\n", reported,
         reported == 1 ? "" : "s", ignored
  exit (reported > 0 || runtime > 0) ? 1 : 0
}
