#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The docs say what the binaries do: every long flag that `xsprofd --help` and
# `xsprofctl --help`, `xsprof-diff --help` and `xsprof-history --help` list is in the man page and the bash completion of that program.
# Usage: tests/packaging/docs_in_step.sh BUILD_DIR (ctest runs it as docs_in_step)
set -eu
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
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
check output/xsprof-history "$src/packaging/man/xsprof-history.1" "$src/packaging/completion/xsprof-history"
# Every output format of the table (output/output.c, xsprofd --list-formats) is in the man
# page with its file extensions, in the API's and the CLI's docs.
formats=$("$build/daemon/xsprofd" --list-formats)
[ "$(printf '%s\n' "$formats" | wc -l)" -ge 5 ] || { echo "FAIL --list-formats: $formats"; failures=$((failures + 1)); }
printf '%s\n' "$formats" | while IFS="$(printf '\t')" read -r name exts where summary; do
	m=$(printf '%s' "$name" | sed 's/-/\\\\-/g')
	grep -q -- "$m" "$src/packaging/man/xsprofd.8" || echo "FAIL format $name is not in xsprofd.8"
	for e in $(printf '%s' "$exts" | tr ',' ' '); do
		grep -qF -- "$e" "$src/packaging/man/xsprofd.8" || echo "FAIL format $name: $e is not in xsprofd.8"
	done
	case $where in *recording* | *window* | *scrape*)
		grep -q -- "$name" "$src/daemon/API.md" || echo "FAIL format $name ($where) is not in daemon/API.md" ;;
	esac
	[ -n "$summary" ] || echo "FAIL format $name has no summary"
done >"$build/docs_formats.out"
if [ -s "$build/docs_formats.out" ]; then
	cat "$build/docs_formats.out"
	failures=$((failures + $(wc -l <"$build/docs_formats.out")))
fi
echo "checked $(printf '%s\n' "$formats" | wc -l) formats"
# Every flight recorder trigger kind (daemon/base/flight_rule.c's table, xsprofd
# --list-triggers) and its keys are in xsprofd(8), xsprofctl(1), both --help texts, the
# README and the API's docs.
triggers=$("$build/daemon/xsprofd" --list-triggers)
[ "$(printf '%s\n' "$triggers" | wc -l)" -ge 4 ] || { echo "FAIL --list-triggers: $triggers"; failures=$((failures + 1)); }
xs_help=$("$build/daemon/xsprofd" --help)
ctl_help=$("$build/daemon/ctl/xsprofctl" --help)
printf '%s\n' "$triggers" | while IFS="$(printf '\t')" read -r name keys example watches; do
	m=$(printf '%s' "$name" | sed 's/-/\\\\-/g')
	grep -q -- "^\.B $m" "$src/packaging/man/xsprofd.8" || echo "FAIL trigger $name is not in xsprofd.8"
	grep -q -- "$m" "$src/packaging/man/xsprofctl.1" || echo "FAIL trigger $name is not in xsprofctl.1"
	grep -q -- "\*\*$name\*\*" "$src/README.md" || echo "FAIL trigger $name is not in README.md"
	grep -q -- "\"$name\"" "$src/daemon/API.md" || echo "FAIL trigger $name is not in daemon/API.md"
	printf '%s' "$xs_help" | grep -qw -- "$name" || echo "FAIL trigger $name is not in xsprofd --help"
	printf '%s' "$ctl_help" | grep -qw -- "$name" || echo "FAIL trigger $name is not in xsprofctl --help"
	[ "$keys" = - ] && keys=
	for k in $(printf '%s' "$keys" | tr ',' ' '); do
		mk=$(printf '%s' "$k" | sed 's/-/\\\\-/g')
		grep -q -- "$mk=" "$src/packaging/man/xsprofd.8" || echo "FAIL trigger $name: $k= is not in xsprofd.8"
	done
	[ -n "$example" ] && [ -n "$watches" ] || echo "FAIL trigger $name has no example or event"
done >"$build/docs_triggers.out"
if [ -s "$build/docs_triggers.out" ]; then
	cat "$build/docs_triggers.out"
	failures=$((failures + $(wc -l <"$build/docs_triggers.out")))
fi
echo "checked $(printf '%s\n' "$triggers" | wc -l) trigger kinds"
# Every program answers --version with the project's version.
for prog in daemon/xsprofd daemon/ctl/xsprofctl output/xsprof-diff output/xsprof-history; do
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
