#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libfuse >= 3.18 for FUSE over io_uring, as a backport would get it.
#
#   scripts/fuse3.sh [PREFIX]      (default: build/fuse3/inst of this tree)
#
# When pkg-config finds a system libfuse3 of at least 3.18, there is nothing
# to do: the Makefile uses it.  Otherwise this fetches Debian's own fuse3
# source package from the unstable suite (apt checks the archive's
# signatures; a temporary sources file and list directory under build/
# leave the system's apt configuration untouched), and builds a static
# libfuse3.a with io_uring into PREFIX, which the Makefile then links
# (pkg-config --static).  Nothing downloaded or built is committed.
#
# The version tested is pinned; when the archive has moved on, a newer
# 3.x >= 3.18 is taken instead, and said.  Called by scripts/deps.sh.
set -euo pipefail

PINNED=3.18.3-1     # tested: make check, both transports
MIN=3.18

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$top/build/fuse3/inst}
work=$(dirname "$prefix")

if pkg-config --atleast-version="$MIN" fuse3 2>/dev/null; then
	exit 0
fi
if [ -f "$work/.done" ] && [ -n "$(find "$prefix" -name fuse3.pc 2>/dev/null)" ]; then
	exit 0
fi

log=$work/build.log
mkdir -p "$work"
echo "fuse3.sh: the system's libfuse3 is older than $MIN (no FUSE over io_uring);"
echo "fuse3.sh: building Debian's fuse3 source package into $prefix (log: $log)"

rm -rf "$work/apt" "$work/src" "$work/bld" "$prefix"
mkdir -p "$work/apt/lists/partial" "$work/src"
cat >"$work/apt/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
EOF
apt_opts=(-q -o "Dir::Etc::sourcelist=$work/apt/sources.list"
	-o Dir::Etc::sourceparts=/dev/null
	-o "Dir::State::Lists=$work/apt/lists"
)
[ "$(id -u)" -ne 0 ] || apt_opts+=(-o APT::Sandbox::User=root)
if ! apt-get "${apt_opts[@]}" update >"$log" 2>&1; then
	echo "fuse3.sh: apt-get update of Debian's source index failed; see $log" >&2
	exit 1
fi
cd "$work/src"
if ! apt-get "${apt_opts[@]}" source --download-only "fuse3=$PINNED" >>"$log" 2>&1; then
	echo "fuse3.sh: fuse3 $PINNED is no longer in the archive; taking its newest fuse3"
	apt-get "${apt_opts[@]}" source --download-only fuse3 >>"$log" 2>&1 || {
		echo "fuse3.sh: apt-get source fuse3 failed; see $log" >&2
		exit 1
	}
fi
dsc=$(ls fuse3_*.dsc | sort -V | tail -n 1)
version=$(sed -n 's/^Version: //p' "$dsc")
if ! dpkg --compare-versions "$version" ge "$MIN"; then
	echo "fuse3.sh: the archive's fuse3 is $version, older than $MIN" >&2
	exit 1
fi
dpkg-source -x "$dsc" fuse3 >>"$log" 2>&1
# Static, library only; io_uring needs liburing and libnuma (deps.sh).
if ! { meson setup "$work/bld" fuse3 --prefix="$prefix" --default-library=static \
	-Denable-io-uring=true -Dexamples=false -Dtests=false -Dutils=false \
	-Duseroot=false -Dinitscriptdir= &&
	ninja -C "$work/bld" && ninja -C "$work/bld" install; } >>"$log" 2>&1; then
	echo "fuse3.sh: building libfuse $version failed; see $log" >&2
	exit 1
fi
if ! grep -q "enable-io-uring: true" "$work/bld/meson-logs/meson-log.txt" 2>/dev/null &&
	! grep -q "enable-io-uring *: *true" "$log"; then
	echo "fuse3.sh: libfuse $version was configured without io_uring; see $log" >&2
	exit 1
fi
echo "$version" >"$work/.done"
echo "fuse3.sh: libfuse $version with io_uring in $prefix"
