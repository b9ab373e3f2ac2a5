# Sourced (bash) by examples/run.sh and test/gpu/cupy_collectives.sh: runs MPI programs through the
# coll/dfccl of a build tree that is not installed.
#   uninstalled_component REPO_ROOT   sets build (BUILD_DIR, else the current directory when it holds
#     libdfccl.la, else REPO_ROOT), sodir (DFCCL_COMPONENT_DIR, else build/ompi_coll_dfccl/.libs),
#     cuda and cuda_lib (CUDA_HOME, else the CUDA configure found, else /usr/local/cuda) and exports
#     what mpirun's ranks need; prints FAIL and returns 1 when sodir has no mca_coll_dfccl.so.
#   ranks_selecting_dfccl DIR   of a run with --output-filename DIR and --mca coll_base_verbose 10:
#     how many ranks said that Open MPI selected coll/dfccl (ranks, not lines: each rank says it
#     once per communicator).
uninstalled_component() {
  if [ -n "${BUILD_DIR:-}" ]; then build=$(cd "$BUILD_DIR" && pwd) || return 1
  elif [ -f libdfccl.la ]; then build=$PWD
  else build=$(cd "$1" && pwd) || return 1; fi
  sodir=${DFCCL_COMPONENT_DIR:-$build/ompi_coll_dfccl/.libs}
  local configured
  configured=$(sed -n 's|^CUDA_CPPFLAGS = -I\(.*\)/include *$|\1|p' "$build/Makefile" 2> /dev/null)
  cuda=${CUDA_HOME:-${configured:-/usr/local/cuda}}
  cuda_lib=$cuda/lib64
  [ -d "$cuda_lib" ] || cuda_lib=$cuda/lib
  [ -f "$sodir/mca_coll_dfccl.so" ] || {
    echo "FAIL: no $sodir/mca_coll_dfccl.so (build with ./configure && make, or set DFCCL_COMPONENT_DIR)"
    return 1
  }
  # Open MPI loads coll/dfccl from the component path, which replaces the default: keep Open MPI's
  # own components (SYS_DEFAULT).  The uninstalled component finds libdfccl in the build's .libs.
  export OMPI_MCA_mca_base_component_path="$sodir:SYS_DEFAULT"
  local d
  for d in "$cuda_lib" "$build/.libs"; do
    [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  export LD_LIBRARY_PATH
  # Containers often forbid the cross-memory attach (ptrace) that Open MPI's shared-memory transport
  # uses for large host messages; the programs' host messages do not need it.
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
}

ranks_selecting_dfccl() {
  local r n=0
  for r in "$1"/1/rank.*; do
    cat "$r"/stdout "$r"/stderr 2> /dev/null | grep -q 'selecting *dfccl.*Enabled' && n=$((n + 1))
  done
  echo "$n"
}
