#!/bin/sh
# Regenerates the build system (configure, Makefile.in) from configure.ac/Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf --install --force
