#!/bin/sh
# Builds the OSU micro-benchmarks with CUDA support, for test/gpu/osu.sh: run.sh does it once per
# call from the tarball carried in .osu/ (git-ignored: the benchmarks are not ours and are never
# committed).  Any OSU 7.x release tree does; one way to make the tarball on a machine without the
# network is from a public mirror of the 7.4 release (e.g. GitHub's sherrywong1220/osu-micro-benchmarks-7.4):
#   git -C MIRROR archive --format=tar.gz --prefix=osu-micro-benchmarks-7.4/ HEAD -o .osu/osu-micro-benchmarks-7.4.tar.gz
# Usage: sh test/gpu/osu_build.sh TARBALL [DEST]      DEST default /tmp/osu-build
set -e
tarball=${1:?usage: osu_build.sh TARBALL [DEST]}
dest=${2:-/tmp/osu-build}
case $tarball in /*) ;; *) tarball=$PWD/$tarball ;; esac
rm -rf "$dest" && mkdir -p "$dest"
tar xzf "$tarball" -C "$dest" --strip-components=1
cd "$dest"
# A git archive gives every file one time: keep make from rerunning the autotools.
touch aclocal.m4
sleep 1
touch configure
sleep 1
find . -name Makefile.in -exec touch {} +
# CUDA 13 takes a cudaMemLocation and flags in cudaMemPrefetchAsync (only OSU's managed-memory runs
# call it); 7.4 still passes a device number.
sed -i 's/cudaMemPrefetchAsync(buf, length, devid, um_stream)/cudaMemPrefetchAsync(buf, length, (struct cudaMemLocation){.type = devid < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice, .id = devid}, 0, um_stream)/' \
  c/util/osu_util_mpi.c
cuda=${CUDA_HOME:-/usr/local/cuda}
./configure CC=mpicc CXX=mpicxx --enable-cuda --with-cuda="$cuda" --with-cuda-include="$cuda/include" \
  --with-cuda-libpath="$cuda/lib64" > configure.log 2>&1 || { tail -n 30 configure.log; exit 1; }
make -j"$(nproc)" > make.log 2>&1 || { grep -m 20 -E "error" make.log; exit 1; }
ls c/mpi/collective/blocking/osu_allreduce c/mpi/collective/non_blocking/osu_iallreduce
