#!/bin/bash
# Pacing tier for scripts/check.sh: the interposer under LD_PRELOAD (stand-in
# NCCL/CUDA) and harmonics-emujob on loopback against BUILDDIR (both also run in
# `make check`), then the real-NCCL GPU check when a GPU is visible.
# Usage: tests/pace/run.sh BUILDDIR   Exit: 0 pass, 1 fail, 77 nothing could run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:-${top_builddir:-.}}" && pwd)
export top_builddir=$b
rc=0 ran=0
for t in "$here/nccl_preload.sh" "$here/emujob_local.sh" "$here/../gpu/check_nccl_gpu.sh"; do
	echo "--- ${t#"$here"/}"
	timeout 300 "$t"
	r=$?
	case $r in
	0) ran=1 ;;
	77) ;;
	*) rc=1 ;;
	esac
done
((rc == 0 && ran == 0)) && exit 77
exit $rc
