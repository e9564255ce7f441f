#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Profiles over time, end to end (issue 55): a real git repository of 20 commits of a program
# (tests/output/history/bench.c: hist_hot and hist_cold spin the CPU, and each step launches a
# 2 ms kernel hist_gemm on the GPU double). Commit 12 makes hist_hot 15% slower (a line of its
# body), commit 16 makes hist_gemm 20% slower; every other commit touches other files. Each
# commit is built, then profiled 5 times under the real xsprofd (folded stacks and a GPU
# report) in 5 rounds that each run every commit once in a shuffled order, and each run
# stored with xsprof-history record. Then, on every store given:
#   - steps finds a step of hist_hot at commit 12 and of hist_gemm at 16, and none elsewhere;
#     for commit 12 it names the commit and marks it as the one that touched hist_hot's lines
#     (found by the binary's line tables);
#   - a flat history (commits 1-11 as a bench of their own) gives no step;
#   - ci on a pull-request-like branch that makes hist_hot 15% slower exits 3 and writes the
#     Markdown (a table, checked with a Markdown parser), the JSON and the badge; on one that
#     makes it 2% slower it exits 0 and hist_hot is SAME or UNKNOWN, never DIFFERENT;
#   - bad input (a run without a commit, a corrupt profile) is refused and costs nothing stored.
# Stores: an SQLite file, and PostgreSQL when $XSPROF_TEST_PG_URL is set (with_postgres.sh
# starts a real server and sets it; ctest runs both as history_e2e). Any FAIL fails.
#
# Usage: tests/output/history/history_e2e.sh BUILD_DIR
set -uo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
xsprofd=$build/daemon/xsprofd
hist=$build/output/xsprof-history
py=/usr/bin/python3
runs=5
failures=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}
for f in "$xsprofd" "$hist" "$build/tests/libxs_gpu_double.so" /usr/bin/git /usr/bin/cc "$py"; do
	[[ -x $f || -f $f ]] || {
		echo "FAIL missing $f"
		exit 1
	}
done
"$py" -c 'import markdown' 2>/dev/null || {
	echo "FAIL python3-markdown is missing (scripts/deps.sh installs it)"
	exit 1
}

dir=$(mktemp -d /tmp/xsprof-history-XXXXXX)
trap 'rm -rf "$dir"' EXIT
repo=$dir/repo
mkdir -p "$repo" "$dir/bin" "$dir/runs"
export GIT_AUTHOR_NAME=xsprof GIT_AUTHOR_EMAIL=xsprof@localhost
export GIT_COMMITTER_NAME=xsprof GIT_COMMITTER_EMAIL=xsprof@localhost
git -C "$repo" init -q -b main
cp "$here/bench.c" "$repo/bench.c"
printf 'notes\n' >"$repo/NOTES"

stores=("$dir/history.db")
[[ -n ${XSPROF_TEST_PG_URL:-} ]] && stores+=("$XSPROF_TEST_PG_URL")
echo "stores: ${stores[*]}"

# commit MSG: everything in the repo committed; its hash on stdout
commit() {
	git -C "$repo" add -A && git -C "$repo" commit -q -m "$1" && git -C "$repo" rev-parse HEAD
}

# build TAG BRANCH BENCH...: build the repo's bench.c as it is now into $dir/bin/TAG; its runs
# (see run_all) are recorded under the current commit and BRANCH, in each BENCH
declare -a tags
declare -A tag_sha tag_branch tag_benches
build() {
	local tag=$1 branch=$2 bin
	shift 2
	# the same file name at every commit: the process's name is a frame of the profile
	mkdir -p "$dir/bin/$tag"
	bin=$dir/bin/$tag/bench
	cc -O1 -g -fno-omit-frame-pointer -I"$src" -o "$bin" "$repo/bench.c" -L"$build/tests" \
		-lxs_gpu_double -Wl,-rpath,"$build/tests" || {
		fail "$tag: bench.c does not build"
		return 1
	}
	tags+=("$tag")
	tag_sha[$tag]=$(git -C "$repo" rev-parse HEAD)
	tag_branch[$tag]=$branch
	tag_benches[$tag]="$*"
}

# run_one TAG I: the I-th run of TAG's binary under xsprofd, recorded in every store. The runs
# are made out of order (run_all), so each is recorded at the time it would have had in order
# (--time: the history orders commits by their first run), a minute apart per build.
run_one() {
	local tag=$1 i=$2 s b k when
	for k in "${!tags[@]}"; do [[ ${tags[k]} == "$tag" ]] && break; done
	when=$((1700000000 + k * 60 + i))
	rm -f "$dir/cupti.sock"
	if ! timeout 120 "$xsprofd" -f -F 1999 --cupti-socket "$dir/cupti.sock" \
		-o "$dir/runs/$tag-$i.folded" -o "$dir/runs/$tag-$i.gpu.json" -- "$dir/bin/$tag/bench" \
		>"$dir/runs/$tag-$i.log" 2>&1; then
		fail "$tag run $i: xsprofd failed: $(tail -3 "$dir/runs/$tag-$i.log")"
		return 1
	fi
	for s in "${stores[@]}"; do
		for b in ${tag_benches[$tag]}; do
			"$hist" record -q --db "$s" -p demo -b "$b" --repo "$repo" -c "${tag_sha[$tag]}" \
				--branch "${tag_branch[$tag]}" --label "run=$i" --time "$when" \
				"$dir/runs/$tag-$i.folded" "$dir/runs/$tag-$i.gpu.json" ||
				fail "$tag run $i: record into $s failed"
		done
	done
}

# run_all: $runs rounds, each running every built binary once in an order shuffled with a fixed
# seed. A busy machine's slow minute then lands on one run of many commits, not on all runs of
# a few neighbouring ones, where it would read as a step (as it did, run in order, in CI).
run_all() {
	local i tag
	for ((i = 1; i <= runs; i++)); do
		for tag in $(printf '%s\n' "${tags[@]}" |
			shuf --random-source=<(yes "xsprof history round $i")); do
			run_one "$tag" "$i"
		done
	done
}

start=$SECONDS
declare -a sha
for k in $(seq 1 20); do
	case $k in
	12)
		# hist_hot's loop runs 15% longer: a line of its body
		sed -i 's|for (uint64_t i = 0; i < HOT_ITERS; i++)|for (uint64_t i = 0; i < HOT_ITERS + HOT_ITERS * 15 / 100; i++)|' "$repo/bench.c"
		grep -q 'HOT_ITERS \* 15' "$repo/bench.c" || fail "commit 12's edit did not apply"
		msg="hot: a longer loop" ;;
	16)
		sed -i 's|xs_double_kernel("hist_gemm", KERNEL_NS)|xs_double_kernel("hist_gemm", KERNEL_NS * 6 / 5)|' "$repo/bench.c"
		grep -q 'KERNEL_NS \* 6 / 5' "$repo/bench.c" || fail "commit 16's edit did not apply"
		msg="gemm: a bigger tile" ;;
	*)
		printf 'note %d\n' "$k" >>"$repo/NOTES"
		msg="notes: $k" ;;
	esac
	sha[k]=$(commit "$msg")
	if ((k <= 11)); then
		build "c$k" main bench flat
	else
		build "c$k" main bench
	fi
done
last_bin=$dir/bin/c20/bench

# PR-like branches off commit 20: hist_hot 15% slower, and 2% slower.
git -C "$repo" checkout -q -b slow
sed -i 's|i < HOT_ITERS + HOT_ITERS \* 15 / 100; i++)|i < (HOT_ITERS + HOT_ITERS * 15 / 100) * 115 / 100; i++)|' "$repo/bench.c"
slow=$(commit "hot: slower still")
build slow slow bench
git -C "$repo" checkout -q main
git -C "$repo" checkout -q -b tiny
sed -i 's|i < HOT_ITERS + HOT_ITERS \* 15 / 100; i++)|i < (HOT_ITERS + HOT_ITERS * 15 / 100) * 102 / 100; i++)|' "$repo/bench.c"
tiny=$(commit "hot: a little slower")
build tiny tiny bench
git -C "$repo" checkout -q main
run_all
echo "${#tags[@]} builds (20 commits and 2 branches) x $runs runs, interleaved, profiled and stored in $((SECONDS - start)) s"

for s in "${stores[@]}"; do
	case $s in postgres*) name=postgresql ;; *) name=sqlite ;; esac
	echo "== $name"
	out=$dir/$name
	mkdir -p "$out"
	"$hist" steps --db "$s" -p demo -b bench --branch main --repo "$repo" --binary "$last_bin" \
		--svg-dir "$out" >"$out/steps.txt" 2>"$out/steps.err" ||
		fail "$name: steps failed: $(cat "$out/steps.err")"
	grep '^step:' "$out/steps.txt" | sed 's/^/     /'
	idx() { # HASH: its commit number
		local k
		for k in $(seq 1 20); do [[ ${sha[k]} == "$1"* ]] && echo "$k"; done
	}
	bad_at=0
	# "step: KIND NAME at HASH (commit I of N): ..." (a name may hold spaces)
	while read -r line; do
		at=$(sed -E 's/.* at ([0-9a-f]{12}) \(commit [0-9]+ of [0-9]+\).*/\1/' <<<"$line")
		k=$(idx "$at")
		[[ $k == 12 || $k == 16 ]] || {
			bad_at=$((bad_at + 1))
			echo "     at commit '$k': $line"
		}
	done < <(grep '^step:' "$out/steps.txt")
	[[ $bad_at == 0 ]] && pass "$name: every step is at commit 12 or 16" ||
		fail "$name: $bad_at steps at other commits"
	grep -qE "^step: self hist_hot at ${sha[12]:0:12} " "$out/steps.txt" &&
		pass "$name: hist_hot (self) stepped at commit 12" ||
		fail "$name: no step of hist_hot (self) at commit 12"
	grep -qE "^step: kernel hist_gemm at ${sha[16]:0:12} " "$out/steps.txt" &&
		pass "$name: kernel hist_gemm stepped at commit 16" ||
		fail "$name: no step of kernel hist_gemm at commit 16"
	# the block after hist_hot's step: its source by line tables, commit 12 marked
	block=$(sed -n "/^step: self hist_hot at /,/^step:/p" "$out/steps.txt")
	grep -qE "source: bench.c:[0-9]+-[0-9]+ \(line tables\)" <<<"$block" &&
		pass "$name: hist_hot's source found by line tables: $(grep -oE 'bench.c:[0-9]+-[0-9]+' <<<"$block")" ||
		fail "$name: hist_hot's source not found by line tables"
	grep -qE "^    ${sha[12]:0:12} hot: a longer loop   <- touched it" <<<"$block" &&
		pass "$name: commit 12 named as the one that touched hist_hot" ||
		fail "$name: commit 12 not marked as touching hist_hot"
	[[ -s "$out/self-hist_hot.svg" ]] && "$py" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$out/self-hist_hot.svg" &&
		pass "$name: a trend SVG of hist_hot, well-formed" || fail "$name: no well-formed trend SVG of hist_hot"

	"$hist" steps --db "$s" -p demo -b flat --repo "$repo" >"$out/flat.txt" 2>&1 ||
		fail "$name: steps of the flat history failed"
	grep -qE "^0 steps in [0-9]+ figures" "$out/flat.txt" &&
		pass "$name: the flat history: $(tail -1 "$out/flat.txt")" ||
		fail "$name: the flat history has steps: $(grep '^step:' "$out/flat.txt" | head -3)"

	"$hist" ci --db "$s" -p demo -b bench --repo "$repo" --base main --head slow \
		--markdown "$out/slow.md" --json "$out/slow.json" --badge "$out/slow.svg" \
		>"$out/slow.txt" 2>&1
	rc=$?
	[[ $rc == 3 ]] && pass "$name: ci on the slow branch exits 3" ||
		fail "$name: ci on the slow branch exited $rc: $(head -5 "$out/slow.txt")"
	"$py" - "$out/slow.md" "$out/slow.json" "$out/slow.svg" <<'EOF' && pass "$name: the slow branch's Markdown renders a table naming hist_hot; JSON and badge parse" || fail "$name: the slow branch's outputs"
import json, sys, markdown, xml.etree.ElementTree as E
md, js, badge = sys.argv[1:]
html = markdown.markdown(open(md).read(), extensions=["tables"])
assert "<table>" in html and "hist_hot" in html.split("<table>")[1], html[:400]
j = json.load(open(js))
rows = [r for r in j["rows"] if r["name"] == "hist_hot" and r["kind"] == "self"]
assert rows and rows[0]["verdict"] == "DIFFERENT" and rows[0]["effect"] > 0.05, rows
E.parse(badge)
EOF
	"$hist" ci --db "$s" -p demo -b bench --repo "$repo" --base main --head tiny \
		--json "$out/tiny.json" >"$out/tiny.txt" 2>&1
	rc=$?
	[[ $rc == 0 ]] && pass "$name: ci on the 2% branch exits 0" ||
		fail "$name: ci on the 2% branch exited $rc: $(head -5 "$out/tiny.txt")"
	v=$("$py" -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(" ".join(r["verdict"] for r in j["rows"] if r["name"] == "hist_hot" and r["kind"] == "self"))' "$out/tiny.json")
	[[ $v == SAME || $v == UNKNOWN ]] && pass "$name: a 2% change on $runs runs is $v" ||
		fail "$name: a 2% change on $runs runs is '$v'"

	before=$("$hist" runs --db "$s" -p demo -b bench | wc -l)
	"$hist" record --db "$s" -p demo -b bench "$dir/runs/c1-1.folded" >/dev/null 2>&1
	rc=$?
	printf 'main;hist_hot twelve\n' >"$dir/bad.folded"
	"$hist" record --db "$s" -p demo -b bench -c "${sha[20]}" "$dir/runs/c1-1.folded" \
		"$dir/bad.folded" >/dev/null 2>"$out/bad.err"
	rc2=$?
	after=$("$hist" runs --db "$s" -p demo -b bench | wc -l)
	[[ $rc == 2 && $rc2 == 1 && $before == "$after" ]] &&
		pass "$name: a run without a commit (exit $rc) and a corrupt profile (exit $rc2: $(head -1 "$out/bad.err")) store nothing" ||
		fail "$name: bad input: exits $rc and $rc2, runs $before then $after"
done
# The shipped CI jobs (packaging/ci/): their xsprof-history lines, run as written, on the slow
# branch with a copy of the SQLite store.
for wf in github-actions.yml gitlab-ci.yml; do
	rec=$(grep -A1 '# xsprof-history: record' "$src/packaging/ci/$wf" | tail -1)
	ci=$(grep -A1 '# xsprof-history: ci' "$src/packaging/ci/$wf" | tail -1)
	[[ $rec == *"xsprof-history record"* && $ci == *"xsprof-history ci"* ]] || {
		fail "$wf: no xsprof-history record and ci lines"
		continue
	}
	cp "$dir/history.db" "$dir/wf.db"
	git -C "$repo" checkout -q slow
	cp "$dir/runs/slow-1.folded" "$repo/run.folded"
	cp "$dir/runs/slow-1.gpu.json" "$repo/run.gpu.json"
	(cd "$repo" && export XSPROF_HISTORY=$dir/wf.db PROJECT=demo BRANCH=slow BASE=main \
		PATH="$build/output:$PATH" && eval "$rec" && eval "$ci") >"$dir/wf.txt" 2>&1
	rc=$?
	[[ $rc == 3 && -s $repo/comment.md && -s $repo/result.json && -s $repo/badge.svg ]] &&
		pass "$wf: its record and ci lines store the run and exit 3 with comment.md, result.json, badge.svg" ||
		fail "$wf: its lines exited $rc: $(tail -3 "$dir/wf.txt")"
	rm -f "$repo"/run.folded "$repo"/run.gpu.json "$repo"/comment.md "$repo"/result.json "$repo"/badge.svg
	git -C "$repo" checkout -q main
done
echo "took $((SECONDS - start)) s"
if ((failures)); then
	echo "FAIL history_e2e: $failures"
	exit 1
fi
echo "history_e2e: all passed"
