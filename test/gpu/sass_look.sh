#!/bin/sh
# Whether daemon block 0's look at the host's SQ goes over the bus in one trip (issue 15): in the
# daemon kernel's SASS, the entry's four line loads (16 bytes each, 64 bytes apart, the last one
# the acquire: LDG.E.128.STRONG.SYS at +0xc0, then CCTL.IVALL) must go out back to back, with no
# compare between them.  A compare there waits for a load's trip before the next load is sent:
# ptxas did so until the thirty-ninth session (df_sq_lines_read, core/queue/sq.h), and a look cost
# two trips.  Usage: sass_look.sh FILE -- FILE an object or cubin with the daemon kernel, or the
# text cuobjdump -sass printed of one (a test's twin feeds it the SASS of the old look).
set -eu
file=$1
if grep -q "Function :" "$file" 2> /dev/null; then
  dump() { cat "$file"; }
else
  cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2> /dev/null | head -n 1)
  [ -n "$cuobjdump" ] || { echo "sass_look: no cuobjdump (CUDA's binary tools) on this machine"; exit 2; }
  dump() { "$cuobjdump" -sass "$file"; }
fi
# Streamed (a daemon's SASS is ~23 MB).  cuobjdump prints each instruction's encoding's second half
# on a line of its own: dropped.  A dump that fails leaves awk no look to find: it says so.
dump | grep -v '^[[:space:]]*/\* 0x[0-9a-f]* \*/[[:space:]]*$' | awk '
  { line[NR] = $0 }
  /CCTL.IVALL/ && line[NR - 1] ~ /LDG\.E\.128\.STRONG\.SYS .*\.64\+0xc0\]/ { ends[++n] = NR - 1 }
  END {
    if (n == 0) { print "FAIL: no load of an SQ entry'"'"'s last line (+0xc0, then CCTL.IVALL) in the SASS"; exit 1 }
    bad = 0
    for (i = 1; i <= n; i++) {
      last = ends[i]
      # The base register of the last line; the first line is loaded from it at no offset.
      base = line[last]; sub(/.*\]\[/, "", base); sub(/\.64\+0xc0\].*/, "", base)
      first = 0
      for (j = last - 1; j > last - 40 && j > 0; j--)
        if (index(line[j], "LDG.E.128.STRONG.SYS") && index(line[j], "][" base ".64]")) { first = j; break }
      if (!first) { print "FAIL: the look ending at SASS line " last ": no load of its first line within 40 lines"; bad = 1; continue }
      compares = 0
      for (j = first + 1; j < last; j++) if (line[j] ~ /ISETP|PLOP3/) compares++
      loads = 0
      for (j = first; j <= last; j++) if (index(line[j], "LDG.E.128.STRONG.SYS")) loads++
      if (compares > 0 || loads != 4) {
        printf "FAIL: a look sends its four lines in %s: %d compares between its first and last load, %d line loads\n", compares ? "two trips or more" : "an unexpected shape", compares, loads
        for (j = first; j <= last + 1; j++) { l = line[j]; gsub(/\/\* 0x[0-9a-f]+ \*\//, "", l); print l }
        bad = 1
      }
    }
    if (!bad) printf "PASS: %d look%s at the SQ, each sending its four line loads back to back (one trip)\n", n, (n > 1 ? "s" : "")
    exit bad
  }'
