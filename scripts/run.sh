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
if "$CHUNKFS" stat "$IMG" /demo >/dev/null 2>&1; then
	"$CHUNKFS" rm -r "$IMG" /demo
fi
step "$CHUNKFS" mkdir "$IMG" /demo
step "$CHUNKFS" put "$IMG" README.md /demo/README.md
step "$CHUNKFS" put "$IMG" include/chunkfs.h /demo/chunkfs.h
step "$CHUNKFS" put -r "$IMG" src /demo/src
step "$CHUNKFS" ls -l "$IMG" /demo
step "$CHUNKFS" stat "$IMG" /demo/chunkfs.h
printf '\n$ chunkfs cat %s /demo/README.md | head -n 5\n' "$IMG"
"$CHUNKFS" cat "$IMG" /demo/README.md | head -n 5 || true

cat <<EOF

chunkfs works: $IMG holds the files above.  Things to try next:
  $CHUNKFS info $IMG --json        # geometry and every chunk, as JSON
  $CHUNKFS ls -l $IMG /demo/src    # -i shows inode numbers: chunk in the top 8 bits
  $CHUNKFS put -r $IMG ~/some/dir /copy && $CHUNKFS get -r $IMG /copy /tmp/back
  $CHUNKFS --help                  # every command
  make check                       # the whole test suite, under ASan and UBSan
EOF
