#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# docs/LOCKING.md names functions, locks and fields in `backquotes`: each
# must still be in the code (src/, tools/, daemon/, include/), so the lock rules
# cannot drift from what they describe (it once cited a spread_pick that
# no longer existed).  A name written as a call, `name()`, must be a
# function defined there.  Names of the kernel's own are listed below.
. "$(dirname "$0")/../cli/lib.sh"
cd "$CHUNKFS_SRC" || exit 1
doc=docs/LOCKING.md
kernel=" i_rwsem flock umount "

mapfile -t words < <(grep -oE '`[A-Za-z_][A-Za-z0-9_]*(\(\))?`' "$doc" | tr -d '`' | sort -u)
if [ "${#words[@]}" -lt 20 ]; then
	fail locking_names_found "only ${#words[@]} names in $doc"
	finish
fi
pass locking_names_found
missing=()
for w in "${words[@]}"; do
	name=${w%()}
	[[ $kernel == *" $name "* ]] && continue
	if [ "$name" != "$w" ]; then
		# a definition: the name then "(" at the start of a line, after its type
		grep -rqE "^[A-Za-z].*[ *]$name\(" src tools daemon include --include='*.c' --include='*.h' ||
			missing+=("$w")
	else
		grep -rqw -- "$name" src tools daemon include || missing+=("$w")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	pass locking_names_exist
else
	fail locking_names_exist "$doc names what the code no longer has: ${missing[*]}"
fi
finish
