#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make run`: mount a default image and say what to do with it.
#
#   scripts/run.sh [IMAGE]        (default chunkfs.img in the source tree)
#
# Makes a 256 MiB image with `chunkfs mkfs` if it does not exist yet, mounts
# it at ./mnt with `chunkfs mount` (a FUSE daemon in the background), shows
# the mount and the chunk states, and prints what to try next.  Running it
# again while it is mounted just shows it again.  Set CHUNKFS to use another
# binary (default build/chunkfs) and MNT for another mount point.
set -euo pipefail

cd "$(dirname "$0")/.."
IMG=${1:-chunkfs.img}
CHUNKFS=${CHUNKFS:-build/chunkfs}
MNT=${MNT:-mnt}

if [ ! -x "$CHUNKFS" ]; then
	echo "run.sh: $CHUNKFS is not built yet (run make first)" >&2
	exit 1
fi

# Print a command as a user would type it, then run it.
step() {
	local shown=("$@")
	[ "${shown[0]}" = "$CHUNKFS" ] && shown[0]=chunkfs
	printf '\n$ %s\n' "${shown[*]}"
	"$@"
}

if [ -e "$IMG" ]; then
	echo "Using the existing $IMG (delete it to start afresh)."
else
	step "$CHUNKFS" mkfs -L demo "$IMG" 256M
fi

mounted() {
	awk -v d="$(cd "$MNT" 2>/dev/null && pwd)" '$2 == d { f = 1 } END { exit !f }' \
		/proc/self/mounts
}

if mounted; then
	echo "$IMG is already mounted at $MNT."
elif [ ! -c /dev/fuse ]; then
	echo "run.sh: /dev/fuse is missing, so $IMG cannot be mounted here" >&2
	echo "(load the fuse module, or give the container the device);" >&2
	echo "it can still be used offline: $CHUNKFS ls|put|get|cat $IMG ..." >&2
	exit 1
else
	mkdir -p "$MNT"
	step "$CHUNKFS" mount "$IMG" "$MNT"
fi

step ls -lia "$MNT"
step df -h "$MNT"
step "$CHUNKFS" info "$IMG"

C=$CHUNKFS
U="fusermount3 -u $MNT"
[ "$(id -u)" = 0 ] && U="umount $MNT"
echo
echo "chunkfs is mounted at $MNT: use it like any other filesystem (ls -i shows"
echo "the chunk of each inode in the top 8 bits of its number).  Try:"
next() { printf '  %-44s # %s\n' "$1" "$2"; }
next "cp -a src include $MNT/" "copy files in"
next "$C info $IMG" "live chunk states: dirty while written, clean 5 s idle"
next "ls -li $MNT/src | head" "inode numbers carry the chunk"
next "$U" "unmount: every chunk is marked clean"
next "$C ls -l $IMG /src" "the image offline, once unmounted"
next "make run" "mount it again"
next "make check" "the whole test suite, under ASan and UBSan"
