#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Corruption met by a command marks its chunk in error on disk with an error
# record; chunkfs info shows it (text and JSON); fsck -p checks exactly that
# chunk.  The damage: one bit of a directory's node block, on the image.
. "$(dirname "$0")/lib.sh"

img=$TESTDIR/e.img
check_exit errors_setup 0 "$CHUNKFS" mkfs -q -c 4 "$img" 64M
expect_exit 0 "$CHUNKFS" mkdir "$img" /a /b || fail errors_setup "mkdir"
echo hi | expect_exit 0 "$CHUNKFS" put "$img" - /a/f || fail errors_setup "put"
achunk=$(( $("$CHUNKFS" stat "$img" /a | awk '/Inode:/ { print $2; exit }') >> 24 ))

# one bit of /a's directory node (the first in a's chunk), on the image
CFSDAMAGE=$TESTDIR/cfsdamage
if ! cfsdamage_build "$CFSDAMAGE" 2>"$TESTDIR/cc.err"; then
	fail errors_setup "cannot build cfsdamage: $(head -c 300 "$TESTDIR/cc.err")"
	finish
fi
dblk=$("$CFSDAMAGE" "$img" dirnode "$achunk")
if [ -z "$dblk" ]; then
	fail errors_setup "no directory block found in chunk $achunk"
	finish
fi

if expect_exit 1 "$CHUNKFS" mkdir "$img" /a/x && grep -q "Bad message" "$ERR"; then
	pass errors_call_fails_ebadmsg
else
	fail errors_call_fails_ebadmsg "$(head -c 300 "$ERR")"
fi
expect_exit 0 "$CHUNKFS" info "$img"
if awk -v c="$achunk" '$1 == c && $2 == "error" { f = 1 } END { exit !f }' "$OUT" &&
   grep -q "chunk $achunk: 1 error" "$OUT" &&
   grep -q "block $dblk, metadata checksum mismatch (Bad message)" "$OUT"; then
	pass errors_info_text
else
	fail errors_info_text "$(tail -n 8 "$OUT")"
fi
expect_exit 0 "$CHUNKFS" info --json "$img"
if python3 - "$OUT" "$achunk" "$dblk" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, b = int(sys.argv[2]), int(sys.argv[3])
for ch in d['chunks']:
    if ch['index'] == c:
        e = ch['first_error']
        assert ch['state'] == 'error' and ch['errors'] == 1, ch
        assert e['block'] == b and e['errno'] == 74 and e['ino'] == 0, e
        assert 'checksum' in e['what'] and e['time'] > 0, e
        assert ch['last_error'] == e, ch
    else:
        assert ch['errors'] == 0 and 'first_error' not in ch, ch
PY
then
	pass errors_info_json
else
	fail errors_info_json "$(head -c 300 "$OUT")"
fi
# the image refuses writers until checked; the check takes that chunk
if expect_exit 1 "$CHUNKFS" mkdir "$img" /b/y && grep -q "run chunkfs fsck" "$ERR"; then
	pass errors_refuse_writer
else
	fail errors_refuse_writer "$(head -c 300 "$ERR")"
fi
expect_exit 4 "$CHUNKFS" fsck -p "$img"
if grep -q "checked 1 of 4 chunks" "$OUT"; then
	pass errors_preen_checks_that_chunk
else
	fail errors_preen_checks_that_chunk "$(head -c 400 "$OUT")"
fi
check_exit errors_repair 1 "$CHUNKFS" fsck -y "$img"
check_exit errors_writable_after 0 "$CHUNKFS" mkdir "$img" /b/y
finish
