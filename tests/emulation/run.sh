#!/bin/bash
# Emulation tier for scripts/check.sh: two harmonics-emujob jobs on a shaped link
# between network namespaces, staggered vs together (netns_stagger.sh; ~70 s,
# root only: exits 77 otherwise).
# Usage: tests/emulation/run.sh BUILDDIR
here=$(cd "$(dirname "$0")" && pwd)
exec timeout 180 "$here/netns_stagger.sh" "$(cd "${1:-${top_builddir:-.}}" && pwd)"
