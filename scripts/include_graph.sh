#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints the cycles of the include graph inside each folder given (and the folders below it);
# exits 1 when there is one. A node is a module: x.c, x.h and x_internal.h are one. An edge is
# an `#include "dir/y.h"` from a file in the folder to a header in the same folder tree.
#   scripts/include_graph.sh output daemon/service
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || {
	echo "usage: $0 DIR..." >&2
	exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for dir in "$@"; do
	abs=$(cd "$dir" 2>/dev/null && pwd) || {
		echo "$0: no folder $dir" >&2
		exit 2
	}
	case "$abs" in
	"$root"/*) rel=${abs#"$root"/} ;;
	*)
		echo "$0: $dir is not inside $root" >&2
		exit 2
		;;
	esac
	: >"$tmp/edges"
	find "$abs" -name '*.[ch]' -type f | sort | while read -r f; do
		from=${f#"$root"/}
		from=${from%.[ch]}
		from=${from%_internal}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" |
			while read -r to; do
				case "$to" in "$rel"/*) ;; *) continue ;; esac
				[ -f "$root/$to.h" ] || continue
				to=${to%_internal}
				[ "$to" = "$from" ] || echo "$from $to"
			done
	done | sort -u >"$tmp/edges"
	if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
		echo "$rel: include cycles (each loop tsort found, each includes the next, the last the first):"
		awk '/input contains a loop/ { if (l != "") print "  " l; l = ""; next }
			{ sub(/^tsort: /, ""); l = l == "" ? $0 : l " -> " $0 }
			END { if (l != "") print "  " l }' "$tmp/loops"
		status=1
	else
		echo "$rel: no include cycles ($(wc -l <"$tmp/edges") edges)"
	fi
done
exit $status
