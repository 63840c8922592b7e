#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fsck's and scrub's command line where it fails (issue 25, smaller items):
#  - an unknown option is told once, by chunkfs (getopt's own message
#    came first: "fsck: invalid option -- 'Q'"), exit 16;
#  - -C FD with FD not open is an error, exit 8, as e2fsck's "Error
#    validating file descriptor" (it was silently ignored); an open one
#    gets the progress lines;
#  - --json prints a JSON object on stdout when the check cannot be made
#    (exit 8): the image, the exit code and the error (it printed
#    nothing), whichever order the options come in.
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

C=$CHUNKFS
img=$TESTDIR/o.img
check_exit mkfs 0 "$C" mkfs -q -c 2 "$img" 16M

for cmd in fsck scrub; do
	target=$img
	[ $cmd = scrub ] && target=$TESTDIR
	if expect_exit 16 "$C" $cmd -Q "$target" &&
	   [ "$(grep -c "Q" "$ERR")" = 1 ] && grep -q "chunkfs: $cmd: unknown option '-Q'" "$ERR"; then
		pass ${cmd}_unknown_option_told_once
	else
		fail ${cmd}_unknown_option_told_once "$(grep Q "$ERR" | head -n 3)"
	fi
	if expect_exit 8 "$C" $cmd -n -C 99 "$target" 99>&- &&
	   grep -q "progress descriptor 99: Bad file descriptor" "$ERR" && [ ! -s "$OUT" ]; then
		pass ${cmd}_progress_fd_not_open
	else
		fail ${cmd}_progress_fd_not_open "$(head -c 300 "$ERR")"
	fi
done
if expect_exit 0 "$C" fsck -n -f -C 7 "$img" 7>"$TESTDIR/progress" &&
   grep -q "^1 2 2 $img\$" "$TESTDIR/progress"; then
	pass fsck_progress_fd_open
else
	fail fsck_progress_fd_open "$(head -c 300 "$TESTDIR/progress" "$ERR")"
fi

# json_error NAME WANT_IMAGE WANT_ERROR_RE CMD...: exit 8 and one JSON object
json_error() {
	local name=$1 image=$2 re=$3
	shift 3
	if ! command -v python3 >/dev/null; then
		skip "$name" "python3 not installed"
		return
	fi
	if expect_exit 8 "$@" && python3 -c '
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["exit"] == 8 and d["image"] == sys.argv[2], d
assert re.search(sys.argv[3], d["error"]), d
' "$OUT" "$image" "$re" 2>"$TESTDIR/py.err"; then
		pass "$name"
	else
		fail "$name" "stdout '$(head -c 200 "$OUT")' $(tail -n 1 "$TESTDIR/py.err")"
	fi
}
json_error fsck_json_missing_image "$TESTDIR/none.img" "none.img: No such file" \
	"$C" fsck -n --json "$TESTDIR/none.img"
json_error fsck_json_no_terminal "$img" "need a terminal" "$C" fsck --json "$img"
json_error fsck_json_progress_fd "$img" "progress descriptor 99" \
	"$C" fsck -n -C 99 --json "$img" 99>&-
json_error scrub_json_not_a_mount "$TESTDIR" "not a chunkfs mount point" \
	"$C" scrub --json "$TESTDIR"
finish
