#!/bin/sh
# Copies UCX's headers (Debian's libucx-dev, on this machine) into .ucx/include, for the GPU
# machine, which has the UCX runtime but not its headers: test/gpu/run.sh builds against them there
# (carry .ucx along).  .ucx is git-ignored: the headers are UCX's, never committed here.
set -e
cd "$(dirname "$0")/../.."
test -f /usr/include/ucp/api/ucp.h || { echo "no /usr/include/ucp: apt-get install libucx-dev"; exit 1; }
rm -rf .ucx && mkdir -p .ucx/include
for d in ucp ucs uct ucm; do [ -d "/usr/include/$d" ] && cp -r "/usr/include/$d" .ucx/include/; done
echo "UCX headers ($(dpkg-query -W -f '${Version}' libucx-dev 2>/dev/null || echo unknown)) in .ucx/include: $(du -sh .ucx | cut -f1)"
