#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install scripts/commit-msg as this clone's commit-msg hook (run by
# `make`), unless a hook of another name is already there.  Quiet when
# there is nothing to do or no git checkout.
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 0
# only in a clone of chunkfs itself, not a copy inside another tree (the
# package build's, under build/deb)
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ] || exit 0
hooks=$(git rev-parse --git-path hooks) || exit 0
dest=$hooks/commit-msg
if [ -e "$dest" ] && ! cmp -s "$dest" scripts/commit-msg; then
	exit 0          # someone's own hook: left alone
fi
cmp -s "$dest" scripts/commit-msg 2>/dev/null && exit 0
mkdir -p "$hooks" && cp scripts/commit-msg "$dest" && chmod +x "$dest" &&
	echo "installed the commit-msg hook (subjects of at most 72 characters) in $dest"
exit 0
