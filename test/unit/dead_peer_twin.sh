#!/bin/sh
# test_dead_peer's twin: without DFCCL_TIMEOUT_S the survivors of a killed rank wait for it.
exec "${top_builddir:-.}/test/unit/test_dead_peer" twin
