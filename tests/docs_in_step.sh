#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The docs say what the binaries do: every long flag that `xsprofd --help` and
# `xsprofctl --help` and `xsprof-diff --help` list is in the man page and the bash completion of that program.
# Usage: tests/docs_in_step.sh BUILD_DIR (ctest runs it as docs_in_step)
set -eu
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
failures=0

check() { # PROGRAM MANPAGE COMPLETION
	prog=$1 man=$2 comp=$3
	# Flags the text defines: everything before its examples (those quote other programs).
	flags=$("$build/$prog" --help | sed '/^Examples:/,$d' | grep -oE -- '--[a-z][a-z0-9-]+' |
		sort -u)
	[ -n "$flags" ] || { echo "FAIL $prog --help lists no flags"; failures=$((failures + 1)); return; }
	for f in $flags; do
		# groff spells a hyphen \- in the page
		m=$(printf '%s' "$f" | sed 's/-/\\\\-/g')
		if ! grep -q -- "$m" "$man"; then
			echo "FAIL $prog: $f is in --help but not in ${man##*/}"
			failures=$((failures + 1))
		fi
		if ! grep -q -- "$f\\b" "$comp"; then
			echo "FAIL $prog: $f is in --help but not in the bash completion"
			failures=$((failures + 1))
		fi
	done
	echo "checked $(echo "$flags" | wc -l) flags of $prog"
}

check daemon/xsprofd "$src/packaging/man/xsprofd.8" "$src/packaging/completion/xsprofd"
check daemon/ctl/xsprofctl "$src/packaging/man/xsprofctl.1" "$src/packaging/completion/xsprofctl"
check output/xsprof-diff "$src/packaging/man/xsprof-diff.1" "$src/packaging/completion/xsprof-diff"
# Every program answers --version with the project's version.
for prog in daemon/xsprofd daemon/ctl/xsprofctl output/xsprof-diff; do
	v=$("$build/$prog" --version 2>&1) || { echo "FAIL $prog --version failed: $v"; failures=$((failures + 1)); continue; }
	case $v in
	*[0-9].[0-9]*) ;;
	*) echo "FAIL $prog --version printed '$v'"; failures=$((failures + 1)) ;;
	esac
done
if [ "$failures" -ne 0 ]; then
	echo "$failures docs out of step"
	exit 1
fi
echo "docs in step"
