#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The kernel matrix: boots Debian's packaged kernels (tests/kernel_matrix/fetch.sh) in qemu with
# an initramfs holding the built xsprofd, xsprofctl, the test workloads they run and a minimal
# python3.11, runs guest/checks.sh inside each guest (what xsprofd captures there, asserted as
# the host tests assert it), and prints a table of kernel x check and "N passed, M failed".
# Exit status 0 only when every check passed on every kernel. One guest at a time.
#
# Usage: tests/kernel_matrix/run.sh BUILD_DIR [KERNEL...]
#   KERNEL: a name fetched into the cache (6.1, 6.12, 5.10; default: all of them), or a path to
#   a vmlinuz (named after its directory). The host's own kernel is not booted: the normal test
#   suite (ctest) runs on it.
# Environment:
#   KM_CACHE    kernel cache (default /var/cache/xsprof-kernels; fetch.sh runs when it is empty)
#   KM_OUT      where the initramfs, each guest's serial log and the summary go
#               (default BUILD_DIR/kernel-matrix)
#   KM_CHECKS   comma list of checks (default: btf,margins,cpu,python,offcpu,wall,wakers,cuda,usdt,
#               scopes,nvtx,service)
#   KM_ACCEL    kvm or tcg (default: kvm when a probe guest boots with it, else tcg)
#   KM_TIMEOUT  seconds per guest (default 600 under TCG, 300 under KVM)
#   KM_VERBOSE  1: the guest prints every log and output whole into its serial log
set -uo pipefail
[[ $# -ge 1 ]] || { sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=${KM_CACHE:-/var/cache/xsprof-kernels}
out=${KM_OUT:-$build/kernel-matrix}
checks=${KM_CHECKS:-btf,margins,cpu,python,offcpu,wall,wakers,cuda,usdt,scopes,nvtx,service}
py=/usr/bin/python3.11
mkdir -p "$out"
out=$(cd "$out" && pwd)

die() { echo "run.sh: $*" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
if [[ ! -x /bin/busybox ]] || ldd /bin/busybox >/dev/null 2>&1; then
	die "no static /bin/busybox (apt-get install busybox-static)"
fi
command -v cpio >/dev/null || die "no cpio (apt-get install cpio)"
[[ -x $py ]] || die "no $py (Debian's python3.11)"
[[ -x $build/daemon/xsprofd ]] || die "$build/daemon/xsprofd is not built"

# ---- the kernels
kernels=()
if (($# == 0)); then
	if ! ls "$cache"/*/vmlinuz >/dev/null 2>&1; then
		"$here/fetch.sh" "$cache" || die "fetch.sh failed"
	fi
	for k in 6.1 6.12 5.10; do [[ -s $cache/$k/vmlinuz ]] && kernels+=("$k"); done
	for d in "$cache"/*/; do
		k=$(basename "$d")
		case " ${kernels[*]} " in *" $k "*) continue ;; esac
		[[ -s $d/vmlinuz ]] && kernels+=("$k")
	done
else
	kernels=("$@")
fi
((${#kernels[@]})) || die "no kernels in $cache (run tests/kernel_matrix/fetch.sh $cache)"
vmlinuz_of() {
	if [[ -f $1 ]]; then echo "$1"; else echo "$cache/$1/vmlinuz"; fi
}
name_of() {
	if [[ -f $1 ]]; then basename "$(dirname "$1")"; else echo "$1"; fi
}
for k in "${kernels[@]}"; do
	[[ -s $(vmlinuz_of "$k") ]] || die "no kernel $k ($(vmlinuz_of "$k"); run fetch.sh)"
done

# ---- the initramfs
root=$out/rootfs
rm -rf "$root"
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,run,etc,km,var/tmp}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
cp /bin/busybox "$root/usr/bin/busybox"
ln -s busybox "$root/usr/bin/sh"
cp "$here/guest/init" "$root/init"
cp "$here/guest/checks.sh" "$here/guest/km_check.py" "$root/km/"
mkdir -p "$root/km/python"
cp "$src/tests/daemon/python/nested.py" "$src/tests/daemon/python/check.py" "$root/km/python/"
chmod 0755 "$root/init"
printf 'B=%q\n' "$build" >"$root/km/env"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost km-guest\n' >"$root/etc/hosts"

# The binaries the checks run (at their own paths, so RUNPATHs hold), then every library they
# need, at the path ld.so found it.
files=(daemon/xsprofd daemon/ctl/xsprofctl cupti_inject/libxsprof_cupti.so
	tests/xs_nofp tests/libxs_nofp_lib.so tests/xs_napwait tests/xs_split tests/xs_wake_chain
	tests/xs_cuda tests/libcuda_xsfake.so tests/xs_usdt tests/libxsprof_cupti_fake.so
	tests/xs_scope_phases tests/xs_nvtx_phases)
missing=()
bins=()
for f in "${files[@]}"; do
	if [[ -e $build/$f ]]; then bins+=("$build/$f"); else missing+=("$f"); fi
done
((${#missing[@]} == 0)) || echo "run.sh: not built, their checks will fail: ${missing[*]}" >&2
for f in "${bins[@]}"; do cp -L --preserve=timestamps --parents "$f" "$root/"; done

# python3.11 with the modules the Python check imports (found by importing them here).
pyfiles=$("$py" - "$root/km/python/nested.py" "$root/km/python/check.py" <<'EOF'
import contextlib, io, os, runpy, sys, tempfile
nested, check = sys.argv[1:3]
with tempfile.NamedTemporaryFile("w", suffix=".folded", delete=False) as t:
    t.write("x;nested.main (nested.py:1) 1\n")
for argv in ([nested, "0.05"], [check, t.name, "nested", "--paths", "main"]):
    sys.argv = argv
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit:
        pass
os.unlink(t.name)
import re, encodings  # noqa: E401 (km_check.py's)
seen = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f and f.startswith(sys.base_prefix + "/lib/python3"):
        seen.add(f)
        d, b = os.path.split(f)
        if b.endswith(".py"):
            pyc = os.path.join(d, "__pycache__", b[:-3] + ".cpython-311.pyc")
            if os.path.exists(pyc):
                seen.add(pyc)
enc = os.path.join(sys.base_prefix, "lib", "python3.11", "encodings")
for f in ("__init__", "aliases", "utf_8", "ascii", "latin_1"):
    seen.add(os.path.join(enc, f + ".py"))
print("\n".join(sorted(seen)))
EOF
) || die "listing python3.11's modules failed"
bins+=("$py")
cp -L --preserve=timestamps --parents "$py" "$root/"
while read -r f; do
	cp -L --preserve=timestamps --parents "$f" "$root/"
	[[ $f == *.so ]] && bins+=("$f")
done <<<"$pyfiles"

libs=$(for f in "${bins[@]}"; do ldd "$f" 2>/dev/null; done |
	awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
for l in $libs; do cp -L --preserve=timestamps --parents "$l" "$root/"; done
# libc's and ld.so's separate debug files, as the host has them (libc6-dbg): the same names.
for l in $libs; do
	id=$(readelf -n "$l" 2>/dev/null | awk '/Build ID/ {print $3; exit}')
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	[[ -n $id && -e $dbg ]] && cp -L --preserve=timestamps --parents "$dbg" "$root/"
done
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"
echo "initramfs: $(du -sh "$root" | cut -f1) unpacked, $(du -h "$out/initramfs.cpio.gz" | cut -f1) gzipped ($out/initramfs.cpio.gz)"
rm -rf "$root"

# ---- KVM or TCG: KVM when a probe guest actually boots with it.
qemu_base=(qemu-system-x86_64 -m 2G -smp 2 -nographic -no-reboot -display none -monitor none)
accel=${KM_ACCEL:-}
if [[ -z $accel ]]; then
	accel=tcg
	if [[ -r /dev/kvm && -w /dev/kvm ]]; then
		probe=$out/probe
		rm -rf "$probe"
		mkdir -p "$probe/root/usr/bin"
		cp /bin/busybox "$probe/root/usr/bin/"
		ln -s usr/bin "$probe/root/bin"
		printf '#!/bin/busybox sh\n/bin/busybox mount -t proc p /proc 2>/dev/null || { /bin/busybox mkdir /proc; /bin/busybox mount -t proc p /proc; }\n/bin/busybox echo "KM PROBE booted"\n/bin/busybox poweroff -f\n' >"$probe/root/init"
		chmod +x "$probe/root/init"
		(cd "$probe/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$probe/initrd.gz"
		(timeout 60 "${qemu_base[@]}" -enable-kvm -cpu host -kernel "$(vmlinuz_of "${kernels[0]}")" \
			-initrd "$probe/initrd.gz" -append "console=ttyS0 panic=-1 quiet" \
			-serial "file:$probe/serial.log" </dev/null >"$probe/qemu.log" 2>&1; true) 2>/dev/null
		if grep -aq "KM PROBE booted" "$probe/serial.log" 2>/dev/null; then
			accel=kvm
		else
			echo "KVM: /dev/kvm does not boot a guest ($(tr -d '\r' <"$probe/qemu.log" | grep -v '^$' | head -1 | cut -c1-160)): TCG"
		fi
	fi
fi
if [[ $accel == kvm ]]; then
	qemu_accel=(-enable-kvm -cpu host)
	tmo=${KM_TIMEOUT:-300}
else
	qemu_accel=(-accel tcg -cpu max)
	tmo=${KM_TIMEOUT:-600}
fi
echo "accelerator: $accel; checks: $checks; kernels: ${kernels[*]}"

# ---- what is expected where not everything passes (tests/kernel_matrix/expect)
declare -A expect why
below_min=" "
while read -r ek ec ee ew; do
	[[ -z $ek || $ek == \#* ]] && continue
	case $ee in
	below-minimum) below_min+="$ek " ;;
	xfail) expect[$ek,$ec]=xfail ;;
	*) die "expect: '$ee' is neither below-minimum nor xfail" ;;
	esac
	why[$ek,$ec]=$ew
done <"$here/expect"
checks_of() { # NAME: the checks its guest runs
	if [[ $below_min == *" $1 "* ]]; then echo btf,minimum; else echo "$checks"; fi
}

# ---- each kernel
declare -A result
names=()
total_start=$(date +%s)
for k in "${kernels[@]}"; do
	name=$(name_of "$k")
	names+=("$name")
	log=$out/$name.serial.log
	rm -f "$log"
	t0=$(date +%s)
	timeout "$tmo" "${qemu_base[@]}" "${qemu_accel[@]}" -kernel "$(vmlinuz_of "$k")" \
		-initrd "$out/initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=1 km.name=$name km.checks=$(checks_of "$name") km.verbose=${KM_VERBOSE:-0}" \
		-serial "file:$log" </dev/null >"$out/$name.qemu.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	# The result lines, each from "KM " on (the firmware's escape codes may come before one).
	tr -d '\r' <"$log" 2>/dev/null | sed 's/^.*\(KM [A-Z][A-Z]* \)/\1/' >"$log.txt"
	boot=$(grep -a '^KM BOOT ' "$log.txt" | head -1)
	finished=$(grep -a "^KM DONE $name" "$log.txt" | head -1)
	echo
	echo "== $name: $(cat "$cache/$name/package" 2>/dev/null || echo "$k"), ${secs}s in the guest ($accel)${boot:+; ${boot#KM BOOT }}"
	[[ -z $finished ]] && echo "   the guest did not finish (qemu exit $rc$( ((rc == 124)) && echo ", timed out after ${tmo}s")); last console lines:" &&
		tail -n 15 "$log.txt" | sed 's/^/   | /'
	grep -a -E "^KM (PASS|FAIL|LOG|REFUSED|DMESG) $name " "$log.txt" | sed 's/^KM /   /'
	[[ $below_min == *" $name "* ]] && echo "   below xsprofd's minimum (expect): ${why[$name,*]}"
	kc=$(checks_of "$name")
	for c in ${kc//,/ }; do
		line=$(grep -a -E "^KM (PASS|FAIL) $name $c( |$)" "$log.txt" | tail -1)
		case $line in
		"KM PASS "*) result[$name,$c]=pass ;;
		"KM FAIL "*) result[$name,$c]=FAIL ;;
		*) result[$name,$c]=FAIL; echo "   FAIL $name $c: no result (the guest did not get there)" ;;
		esac
		if [[ ${expect[$name,$c]:-} == xfail ]]; then
			if [[ ${result[$name,$c]} == pass ]]; then
				result[$name,$c]=XPASS
				echo "   XPASS $name $c: it passes now; take its line out of tests/kernel_matrix/expect"
			else
				result[$name,$c]=xfail
				echo "   XFAIL $name $c: ${why[$name,$c]}"
			fi
		fi
	done
	echo "   (serial log: $log.txt)"
done

# ---- the table
echo
printf '%-10s' check
for n in "${names[@]}"; do printf ' %-14s' "$n"; done
printf ' %s\n' "host ($(uname -r))"
passed=0 failed=0 xfailed=0
for c in ${checks//,/ } minimum; do
	printf '%-10s' "$c"
	for n in "${names[@]}"; do
		r=${result[$n,$c]:--}
		printf ' %-14s' "$r"
		case $r in
		pass) passed=$((passed + 1)) ;;
		xfail) xfailed=$((xfailed + 1)) ;;
		-) ;;
		*) failed=$((failed + 1)) ;;
		esac
	done
	printf ' %s\n' "ctest"
done
echo "($(($(date +%s) - total_start))s for ${#names[@]} guests under $accel; logs in $out)"
((xfailed)) && echo "$xfailed known failures, each named above and in tests/kernel_matrix/expect"
echo "$passed passed, $failed failed" | tee "$out/summary.txt"
((failed == 0))
