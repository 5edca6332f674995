#!/bin/sh
# make check: harmonics.torch.pace on real DDP training (tests/python/test_pace_hook.py)
# with the package from the source tree and the runtime just built. Skips (77)
# without a python3 that has torch with torch.distributed and gloo.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${top_builddir:-.}
lib="$b/src/pace/.libs/libharmonics-pace.so.2"
[ -e "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
# A sanitizer build's runtime cannot be loaded into an uninstrumented python (the
# ASan runtime must come first); the C tests cover it under the sanitizers.
if ldd "$lib" 2>/dev/null | grep -q 'lib[a-z]*san\.so'; then
	echo "SKIP: $lib is built with sanitizers (python cannot load it)"
	exit 77
fi

# The first interpreter with PyTorch: $PYTHON (configure's), python3 on PATH, the
# system's (Debian's python3-torch is there when PATH leads to another python3).
# (configure sets PYTHON=: when it found none.)
py=
for c in ${HM_TEST_PYTHON:-} ${PYTHON:-} python3 /usr/bin/python3; do
	[ "$c" = : ] && continue
	command -v "$c" >/dev/null 2>&1 || continue
	ok=$("$c" -c 'import torch.distributed as d
print(d.is_available() and d.is_gloo_available())' 2>/dev/null)
	if [ "$ok" = True ]; then
		py=$c
		break
	fi
done
if [ -z "$py" ]; then
	echo "SKIP: no python3 with torch (torch.distributed, gloo); Debian: apt-get install python3-torch"
	exit 77
fi
echo "python: $py"
# The stand-in CUDA runtime (built with the NCCL interposer) exercises the CUDA path.
HM_TEST_STANDIN="$b/tests/pace/.libs/libstandin_nccl_cuda.so"
export HM_TEST_STANDIN
PYTHONPATH="$src/python${PYTHONPATH:+:$PYTHONPATH}" HARMONICS_PACE_LIB="$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")" \
	exec timeout 900 "$py" "$src/tests/python/test_pace_hook.py"
