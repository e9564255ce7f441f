#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Debian's packaged kernels for the kernel matrix (tests/kernel_matrix/run.sh), with apt only:
#   6.1   Debian 12 bookworm's current linux-image-6.1.0-*-amd64 (what linux-image-amd64 depends on)
#   6.12  bookworm-backports' linux-image-6.12.*+bpo-amd64
#   5.10  Debian 11 bullseye's linux-image-5.10.0-*-amd64, when the suite can be reached
# Each goes to CACHE_DIR/<name>/: vmlinuz, config (the package's /boot/config-*), version (uname -r),
# package (name=version), btf ("y" when CONFIG_DEBUG_INFO_BTF=y). Idempotent: a kernel whose
# package version is already there is not fetched again. The guests need no modules (serial
# console, initramfs, BPF, perf events, uprobes are all built in on Debian's kernels).
#
# bookworm-backports is added as /etc/apt/sources.list.d/xsprof-kernel-matrix.sources (same URIs
# and Signed-By as debian.sources; backports' default pin 100 changes no installed package).
# bullseye, an older release, is NOT added to the host's apt: it is read through a private apt
# state under CACHE_DIR/apt-bullseye, so the host's package resolution never sees it.
#
# Usage: tests/kernel_matrix/fetch.sh CACHE_DIR        (root; prints one line per kernel)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 CACHE_DIR" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "$0: needs root (apt-get update)" >&2; exit 1; }
mkdir -p "$1"
cache=$(cd "$1" && pwd)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
mirror=
# The host's own URIs and keyring (the registry this machine is set up with), from
# debian.sources, or from a one-line sources.list.
if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
	u=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	k=$(awk '/^Signed-By:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	[[ -n $u ]] && mirror=${u%/}
	[[ -n $k ]] && keyring=$k
fi
if [[ -z $mirror && -r /etc/apt/sources.list ]]; then
	u=$(awk '$1 == "deb" && $2 !~ /^\[/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list)
	[[ -n $u ]] && mirror=${u%/}
fi
[[ -n $mirror ]] || { echo "$0: no Debian archive in this machine's apt sources" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

# unpack NAME DEB: the kernel and its config into $cache/NAME.
unpack() {
	local name=$1 deb=$2 dir=$cache/$1 tmp
	tmp=$(mktemp -d "$cache/.x-XXXXXX")
	dpkg-deb -x "$deb" "$tmp"
	local vmlinuz config
	vmlinuz=$(ls "$tmp"/boot/vmlinuz-* | head -1)
	config=$(ls "$tmp"/boot/config-* | head -1)
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	cp "$vmlinuz" "$dir.new/vmlinuz"
	cp "$config" "$dir.new/config"
	basename "$vmlinuz" | sed 's/^vmlinuz-//' >"$dir.new/version"
	dpkg-deb -f "$deb" Package Version | paste -sd= | sed 's/^Package: //; s/=Version: /=/' \
		>"$dir.new/package"
	if grep -qx 'CONFIG_DEBUG_INFO_BTF=y' "$dir.new/config"; then echo y; else echo n; fi \
		>"$dir.new/btf"
	rm -rf "$tmp" "$dir"
	mv "$dir.new" "$dir"
}

# fetch NAME PACKAGE VERSION [APT-OPTIONS...]: download PACKAGE=VERSION unless already there.
fetch() {
	local name=$1 pkg=$2 ver=$3
	shift 3
	if [[ -s $cache/$name/vmlinuz && $(cat "$cache/$name/package" 2>/dev/null) == "$pkg=$ver" ]]; then
		echo "$name: $pkg=$ver (cached) $(cat "$cache/$name/version"), BTF config=$(cat "$cache/$name/btf")"
		return 0
	fi
	local dl=$cache/.deb
	rm -rf "$dl"
	mkdir -p "$dl"
	chown _apt "$dl" 2>/dev/null || true
	(cd "$dl" && apt-get "$@" download "$pkg=$ver" >/dev/null)
	unpack "$name" "$(ls "$dl"/*.deb | head -1)"
	rm -rf "$dl"
	echo "$name: $pkg=$ver $(cat "$cache/$name/version"), BTF config=$(cat "$cache/$name/btf")"
}

# image APT-OPTIONS... -- [SUITE]: the linux-image-*-amd64 package and version that
# linux-image-amd64 depends on: apt's candidate (security updates included), or SUITE's.
image() {
	local opts=() suite meta dep
	while [[ $1 != -- ]]; do opts+=("$1"); shift; done
	suite=${2:-}
	if [[ -z $suite ]]; then
		meta=$(apt-cache "${opts[@]}" policy linux-image-amd64 | awk '/Candidate:/ {print $2; exit}')
		[[ $meta != "(none)" ]] || meta=
	else
		meta=$(apt-cache "${opts[@]}" madison linux-image-amd64 | awk -v s="$suite" -F' *\\| *' \
			'$3 ~ ("[ /]" s "/") {print $2; exit}')
	fi
	[[ -n $meta ]] || return 1
	dep=$(apt-cache "${opts[@]}" show "linux-image-amd64=$meta" | awk -F': ' '/^Depends:/ {print $2; exit}' |
		tr ',' '\n' | grep -o 'linux-image-[^ ]*-amd64' | head -1)
	[[ -n $dep ]] || return 1
	# The newest version of that package (a security update may be newer than the meta's).
	echo "$dep $(apt-cache "${opts[@]}" madison "$dep" | awk -F' *\\| *' '{print $2; exit}')"
}

# ---- bookworm (the host's suites) and bookworm-backports
src=/etc/apt/sources.list.d/xsprof-kernel-matrix.sources
want="Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: $keyring"
if [[ ! -e $src ]] || [[ $(cat "$src") != "$want" ]] ||
	! ls /var/lib/apt/lists/*bookworm-backports*Packages* >/dev/null 2>&1; then
	printf '%s\n' "$want" >"$src"
	apt-get update -qq
fi
read -r pkg ver < <(image --) || { echo "no linux-image-amd64 in bookworm" >&2; exit 1; }
fetch 6.1 "$pkg" "$ver"
if read -r pkg ver < <(image -- bookworm-backports); then
	fetch 6.12 "$pkg" "$ver"
else
	echo "6.12: no linux-image-amd64 in bookworm-backports: skipped" >&2
fi

# ---- bullseye, in a private apt state
priv=$cache/apt-bullseye
mkdir -p "$priv/lists/partial" "$priv/archives/partial" "$priv/etc/preferences.d"
printf 'deb [signed-by=%s] %s bullseye main\ndeb [signed-by=%s] %s bullseye-updates main\n' \
	"$keyring" "$mirror" "$keyring" "$mirror" >"$priv/etc/sources.list"
if [[ -r /etc/apt/sources.list.d/debian.sources ]] && grep -q debian-security /etc/apt/sources.list.d/debian.sources; then
	sec=$(awk '/^URIs:/ && $2 ~ /debian-security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	printf 'deb [signed-by=%s] %s bullseye-security main\n' "$keyring" "${sec%/}" >>"$priv/etc/sources.list"
fi
popts=(-o "Dir::Etc::sourcelist=$priv/etc/sources.list" -o "Dir::Etc::sourceparts=-"
	-o "Dir::Etc::preferencesparts=$priv/etc/preferences.d"
	-o "Dir::State::lists=$priv/lists" -o "Dir::Cache=$priv" -o "APT::Get::List-Cleanup=0")
if [[ -z $(find "$priv/lists" -name '*bullseye_main*Packages*' -mmin -1440 2>/dev/null) ]]; then
	apt-get "${popts[@]}" update -qq || true
fi
if read -r pkg ver < <(image "${popts[@]}" --); then
	fetch 5.10 "$pkg" "$ver" "${popts[@]}"
else
	echo "5.10: bullseye could not be reached through apt: skipped" >&2
fi
