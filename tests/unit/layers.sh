#!/bin/sh
# The layering the tree promises (docs/architecture.md): src/common/ includes
# no header of src/coordinator/ or src/agent/, neither of those includes one of
# the other, and the node agent's shared object carries no simulator, optimal,
# cassini or crux code (a rack leader runs only the Local Scheduler).
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
src="$top_srcdir/src"
bad=0

# includes FROM_DIR FORBIDDEN_DIR...: quoted includes of FROM_DIR's files that
# name a header living in one of the forbidden folders.
includes() {
	from=$1
	shift
	for f in "$src/$from"/*.[ch]; do
		for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
			for d in "$@"; do
				if [ -f "$src/$d/$h" ]; then
					echo "FAIL: ${f#"$top_srcdir"/} includes $h from src/$d/"
					bad=1
				fi
			done
		done
	done
}
includes common coordinator agent
includes agent coordinator
includes coordinator agent

so="$top_builddir/src/agent/.libs/harmonics_agent.so"
if [ -f "$so" ]; then
	syms=$(nm "$so" | awk '{ print $NF }' | grep -E '^hm_(sim|maxmin|bound|optimal|cassini|crux|pol_eval|policy_)' | head -5)
	if [ -n "$syms" ]; then
		echo "FAIL: harmonics_agent.so carries policy or simulator code:" $syms
		bad=1
	fi
else
	echo "FAIL: $so not built"
	bad=1
fi
[ $bad = 0 ] && echo "PASS: layers hold"
exit $bad
