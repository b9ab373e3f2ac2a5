#!/bin/sh
# Generates ./configure (needs autoconf, automake, libtool, pkg-config).
set -e
cd "$(dirname "$0")"
autoreconf --install --force
# Autoconf's checks remove a core dump named "core" after each test program, and here "core" is a
# source folder: every check printed "rm: cannot remove 'core': Is a directory".  A test's core dump
# cannot be named "core" in this folder anyway, so the word goes from those commands.
sed -e 's/rm -f core /rm -f /' configure > configure.tmp
chmod +x configure.tmp
mv configure.tmp configure
