#!/usr/bin/env bash
# `make run`: show chunkfs working on a default image.
#
#   scripts/run.sh [IMAGE]        (default chunkfs.img in the source tree)
#
# Makes a 256 MiB image with `chunkfs mkfs` if it does not exist yet, shows
# it with `chunkfs info`, copies a few files of this source tree in with
# `chunkfs put`, lists them with `chunkfs ls` and reads one back.  Running it
# again reuses the image and refreshes the files.  Set CHUNKFS to use another
# binary (default build/chunkfs).
set -euo pipefail

cd "$(dirname "$0")/.."
IMG=${1:-chunkfs.img}
CHUNKFS=${CHUNKFS:-build/chunkfs}

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

step "$CHUNKFS" info "$IMG"

# The demo directory is refreshed on every run.
"$CHUNKFS" rm -r -f "$IMG" /demo
step "$CHUNKFS" mkdir "$IMG" /demo
step "$CHUNKFS" put "$IMG" README.md /demo/README.md
step "$CHUNKFS" put "$IMG" include/chunkfs.h /demo/chunkfs.h
step "$CHUNKFS" put -r "$IMG" src /demo/src
step "$CHUNKFS" ls -li "$IMG" /demo
step "$CHUNKFS" stat "$IMG" /demo/chunkfs.h
printf '\n$ chunkfs cat %s /demo/README.md | head -n 5\n' "$IMG"
"$CHUNKFS" cat "$IMG" /demo/README.md | head -n 5 || true

C=$CHUNKFS
echo
echo "chunkfs works: $IMG holds the files above (inode numbers carry the chunk"
echo "number in their top 8 bits).  Things to try next:"
next() { printf '  %-52s # %s\n' "$1" "$2"; }
next "$C info --json $IMG" "geometry and every chunk, as JSON"
next "$C ls -lR $IMG /demo" "the whole demo tree"
next "$C put -r $IMG ~/some/dir /copy" "copy a host tree in ..."
next "$C get -r $IMG /copy /tmp/copy-back" "... and back out"
next "$C --help" "every command (see also README.md)"
next "make check" "the whole test suite, under ASan and UBSan"
