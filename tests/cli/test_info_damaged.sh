#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# info on a damaged image (issue 25 item 11): with one chunk header
# destroyed, info, info --map and info --json show every readable chunk
# and mark the bad one unreadable (exit 1, the cause on stderr); with the
# primary superblock zeroed, info shows the backup's view and every
# command that fails to open the image says that fsck -y restores the
# primary from the backup.  The damage goes through tests/cfsdamage.c.
. "$(dirname "$0")/lib.sh"

img=$TESTDIR/d.img
CFSDAMAGE=$TESTDIR/cfsdamage
if ! cfsdamage_build "$CFSDAMAGE" 2>"$TESTDIR/cc.err"; then
	fail info_damaged_setup "cannot build cfsdamage: $(head -c 300 "$TESTDIR/cc.err")"
	finish
fi
check_exit info_damaged_setup 0 "$CHUNKFS" mkfs -q -c 4 "$img" 64M
echo hi | "$CHUNKFS" put "$img" - /f || fail info_damaged_setup "put failed"
check_exit chdr_damaged 0 "$CFSDAMAGE" "$img" chdr 2 25

# ---- one chunk header destroyed ----
# text: a row per chunk, chunk 2 unreadable, the others as they are
if expect_exit 1 "$CHUNKFS" info "$img" &&
	[ "$(awk '$1 ~ /^[0-9]+$/ { print $1 ":" $2 }' "$OUT" | tr '\n' ' ')" = \
		"0:clean 1:clean 2:unreadable: 3:clean " ]; then
	pass info_shows_readable_chunks
else
	fail info_shows_readable_chunks "$(tail -6 "$OUT") $(head -c 300 "$ERR")"
fi
if grep -q "chunk 2: bad chunk header" "$ERR" && grep -q "fsck -y rebuilds" "$ERR"; then
	pass info_names_bad_header
else
	fail info_names_bad_header "$(head -c 300 "$ERR")"
fi
grep -q "^Unreadable chunks: *1$" "$OUT" && pass info_counts_unreadable ||
	fail info_counts_unreadable "$(grep -i unreadable "$OUT")"

# map: the documented '?' cell for chunk 2, C for the others
if expect_exit 1 "$CHUNKFS" info --map "$img" &&
	[ "$(awk '$1 == "0" && NF == 5 { print $2 $3 $4 $5 }' "$OUT" | tr -d '.0-9#cx*')" = "CC?C" ]; then
	pass info_map_marks_unreadable
else
	fail info_map_marks_unreadable "$(head -c 400 "$OUT") $(head -c 300 "$ERR")"
fi

# JSON: valid, chunk 2 unreadable, the others with their figures
if expect_exit 1 "$CHUNKFS" info --json "$img" &&
	python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
states = [c["state"] for c in d["chunks"]]
assert states == ["clean", "clean", "unreadable", "clean"], states
assert all("free_blocks" in c for i, c in enumerate(d["chunks"]) if i != 2)
PY
then
	pass info_json_marks_unreadable
else
	fail info_json_marks_unreadable "$(head -c 400 "$OUT") $(head -c 300 "$ERR")"
fi
check_exit chdr_fsck_rebuilds 1 "$CHUNKFS" fsck -y "$img"
check_exit info_clean_after_fsck 0 "$CHUNKFS" info "$img"

# ---- primary superblock zeroed ----
check_exit super_zeroed 0 "$CFSDAMAGE" "$img" super 0
hint="the backup superblock is good: chunkfs fsck -y restores the primary from it"
if expect_exit 1 "$CHUNKFS" info "$img" && grep -qF "$hint" "$ERR" &&
	grep -q "^Chunks: *4$" "$OUT"; then
	pass info_bad_super_says_fsck_restores
else
	fail info_bad_super_says_fsck_restores "$(head -c 300 "$ERR")"
fi
if expect_exit 1 "$CHUNKFS" cat "$img" /f && grep -qF "$hint" "$ERR"; then
	pass cat_bad_super_says_fsck_restores
else
	fail cat_bad_super_says_fsck_restores "$(head -c 300 "$ERR")"
fi
mkdir -p "$TESTDIR/m"
if expect_exit '!0' "$CHUNKFS" mount "$img" "$TESTDIR/m" && grep -qF "$hint" "$ERR"; then
	pass mount_bad_super_says_fsck_restores
else
	fail mount_bad_super_says_fsck_restores "$(head -c 300 "$ERR")"
fi
mountpoint -q "$TESTDIR/m" && umount "$TESTDIR/m"
check_exit super_fsck_restores 1 "$CHUNKFS" fsck -y "$img"
if expect_exit 0 "$CHUNKFS" cat "$img" /f && [ "$(cat "$OUT")" = hi ]; then
	pass data_after_restore
else
	fail data_after_restore "$(head -c 300 "$ERR")"
fi
# a file that is no chunkfs image gets no such hint
head -c 1M /dev/urandom >"$TESTDIR/junk"
if expect_exit 1 "$CHUNKFS" info "$TESTDIR/junk" && grep -q "bad magic" "$ERR" &&
	! grep -q backup "$ERR"; then
	pass junk_no_backup_hint
else
	fail junk_no_backup_hint "$(head -c 300 "$ERR")"
fi
finish
