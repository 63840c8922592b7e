#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install the Debian packages chunkfs needs to build and test, only those
# that are missing.  Idempotent, and fast (no apt at all) when everything is
# present.  Uses sudo only when not root.  Then scripts/fuse3.sh builds
# libfuse >= 3.18 into build/fuse3/ where the system's is older.
#
#   scripts/deps.sh [EXTRA-PACKAGE...]
#
# Called by `make run` and by .ci/run.
set -euo pipefail

packages=(
	build-essential # gcc, make, ar; gcc brings libasan and libubsan
	pkg-config      # chunkfs.pc, and finding fuse3
	libfuse3-dev    # the FUSE mount (mount.chunkfs)
	libblkid-dev    # mkfs: what is on a device before writing over it
	fuse3           # fusermount3, /dev/fuse helpers
	e2fsprogs       # reference tools for comparisons
	fuse2fs         # ext4 over FUSE, a baseline for the mount
	python3         # tests validate `chunkfs info --json` with it
	mandoc          # make check lints the manual pages (man/)
	bash-completion # tests/cli/test_completion.sh loads ours with it too
	clang           # the libFuzzer harness (tests/fuzz)
	libclang-rt-14-dev # libFuzzer's runtime for clang 14
	fdisk          # sfdisk: tests make partition tables for mkfs to name
	acl            # setfacl, getfacl: tests/mount/acl.sh
	# libfuse >= 3.18 (FUSE over io_uring), built by scripts/fuse3.sh from
	# Debian's source package while the system's is older
	meson ninja-build liburing-dev libnuma-dev
	debhelper dpkg-dev fakeroot lintian # make deb, and tests/deb in make check
	"$@"
)

installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps.sh: not a Debian-style system; install these yourself: ${packages[*]}" >&2
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2
			exit 1
		fi
		SUDO=(sudo)
	fi

	echo "deps.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# libfuse >= 3.18 where the system's is older (nothing to do, quickly, once built)
# (without it, the system's libfuse serves over /dev/fuse only, and the
# io_uring runs of the mount tests are loud skips)
if ! bash "$(dirname "$0")/fuse3.sh"; then
	echo "deps.sh: WARNING: no libfuse >= 3.18 could be built; chunkfs links" \
		"the system's, without FUSE over io_uring" >&2
fi
