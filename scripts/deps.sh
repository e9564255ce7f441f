#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs what xsprof needs to build and test on Debian 12 (run as root). Safe to re-run.
set -eu
export DEBIAN_FRONTEND=noninteractive
pkgs="
	build-essential g++ cmake pkg-config git
	clang clang-14 llvm libbpf-dev bpftool
	libelf-dev zlib1g-dev libsystemd-dev libmicrohttpd-dev libjson-c-dev libcurl4-openssl-dev
	libcriterion-dev libxml2-utils libsqlite3-dev libpq-dev postgresql-15
	util-linux binutils systemtap-sdt-dev curl iproute2 openssl
	libdw-dev libdebuginfod1 libclang-rt-14-dev
	python3 python3.11-dev python3-torch python3-numpy golang-go linux-perf bpftrace time nodejs
	chromium python3-websocket protobuf-compiler python3-protobuf python3-markdown valgrind openjdk-17-jdk-headless
	systemd dbus adduser groff-base dpkg-dev prometheus
	qemu-system-x86 busybox-static cpio
"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi
