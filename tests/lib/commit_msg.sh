#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# scripts/commit-msg, the hook `make` installs: it refuses a subject of
# more than 72 characters, one without `area: `, and a body not set off by
# a blank line, and takes the rest.
. "$(dirname "$0")/../cli/lib.sh"
hook=$CHUNKFS_SRC/scripts/commit-msg
m=$TESTDIR/msg

try() {         # NAME WANT-EXIT MESSAGE
	printf '%s\n' "$3" >"$m"
	printf '# Please enter the commit message\n' >>"$m"
	check_exit "$1" "$2" sh "$hook" "$m"
}
try commit_msg_short_ok 0 "mount: FUSE over io_uring"
try commit_msg_body_ok 0 "$(printf 'fsck: one line\n\nThe why, as long as it needs to be, in a body wrapped at 72.')"
try commit_msg_72_ok 0 "area: $(printf '%066d' 0)"
try commit_msg_73_refused 1 "area: $(printf '%067d' 0)"
try commit_msg_no_area_refused 1 "fixed the thing"
try commit_msg_no_blank_refused 1 "$(printf 'area: subject\nbody right after')"
try commit_msg_merge_ok 0 "Merge branch 'x'"
printf 'area: %s\n' "$(printf '%080d' 0)" >"$m"
sh "$hook" "$m" 2>"$ERR"
if grep -q 'at most 72' "$ERR"; then
	pass commit_msg_says_why
else
	fail commit_msg_says_why "$(cat "$ERR")"
fi
finish
