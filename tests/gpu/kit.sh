#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Packs a build into a folder that runs on a GPU machine without Debian's libraries: the
# binaries, the injection library, the GPU suite's workloads (built here with nvcc for the
# Hopper and Ampere targets), and every shared library they need beyond glibc and libstdc++,
# each binary's RUNPATH pointed at the folder's lib/ (so the programs xsprofd starts do not
# inherit a library path).
#
# Usage: tests/gpu/kit.sh [--build DIR] [--out DIR]      (defaults: build, .devkit)
set -eu

build=build
out=.devkit
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '3,9p' "$0"; exit 0 ;;
	*) echo "kit.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
for tool in patchelf ldd; do
	command -v $tool > /dev/null || { echo "kit.sh: needs $tool (apt-get install $tool)" >&2; exit 1; }
done
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "kit.sh: no nvcc at $nvcc (set NVCC)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/xsprof" "$out/work"
cp "$build/daemon/xsprofd" "$build/daemon/ctl/xsprofctl" "$out/bin/"
cp "$build/cupti_inject/libxsprof_cupti.so" "$out/lib/xsprof/"
for t in xs_cuda_bench xsprof-cupti-dump xs_cudart_smoke; do
	[ -x "$build/tests/$t" ] && cp "$build/tests/$t" "$out/bin/"
done

# The suite's CUDA programs: sm_90 machine code (H100, H200) and PTX for anything newer.
arch="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=compute_90"
# Frame pointers and no inlining of the call sites, so each site is a frame of its own.
hostflags="-Xcompiler -fno-omit-frame-pointer,-fno-inline-functions"
"$nvcc" -O2 -g $arch $hostflags -cudart shared -o "$out/work/xs_gpu_sites" "$here/sites.cu" -lcuda
"$nvcc" -O2 -g $arch $hostflags -cudart shared -o "$out/work/xs_gpu_launch_cost" "$here/launch_cost.cu"

# Libraries beyond glibc, libstdc++ and libgcc (the GPU machine's own are newer), by soname.
for f in "$out/bin/"* "$out/lib/xsprof/"*; do
	ldd "$f" 2> /dev/null | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
	case "$(basename "$lib")" in
	libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux* | \
		libstdc++.so.* | libgcc_s.so.* | libresolv.so.* | libnsl.so.* | libutil.so.* | libanl.so.* | libcudart.so.* | libcuda.so.* | libcupti.so.*) ;;
	*) cp -L "$lib" "$out/lib/" ;;
	esac
done
for f in "$out/lib/"*.so*; do
	patchelf --set-rpath '$ORIGIN' "$f"
done
for f in "$out/bin/"*; do
	patchelf --set-rpath '$ORIGIN/../lib' "$f"
done
du -sh "$out"
