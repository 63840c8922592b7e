#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# "Done means" of issue 2: a 256 MiB image with 64 chunks accepts a
# 200 MiB file through put; info shows it spread over several chunks via
# continuations; cat returns it byte-identical.
# shellcheck disable=SC1091,SC2015
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/big.img
head -c 200M /dev/urandom >big.dat

check_exit bigfile_mkfs 0 "$C" mkfs -q -c 64 "$img" 256M
check_exit bigfile_put 0 "$C" put "$img" big.dat /big
if expect_exit 0 "$C" info --json "$img" && command -v python3 >/dev/null; then
	read -r conts used_chunks dirty < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["chunks"]
print(sum(x["conts"] for x in c), sum(1 for x in c if x["used_blocks"] > 0),
      sum(1 for x in c if x["state"] != "clean"))' "$OUT")
	[ "$conts" -gt 0 ] && pass bigfile_info_continuations || fail bigfile_info_continuations "conts=$conts"
	[ "$used_chunks" -gt 1 ] && pass bigfile_info_several_chunks || fail bigfile_info_several_chunks "$used_chunks chunks hold data"
	[ "$dirty" = 0 ] && pass bigfile_clean_after_put || fail bigfile_clean_after_put "$dirty dirty chunks"
else
	skip bigfile_info_continuations "python3 missing or info failed"
fi
if expect_exit 0 "$C" info "$img" && grep -qE '^Continuations: +[1-9]' "$OUT"; then
	pass bigfile_info_text_continuations
else
	fail bigfile_info_text_continuations "$(grep Continuations "$OUT")"
fi
if expect_exit 0 "$C" stat "$img" /big && grep -qE 'Chunks: [2-9][0-9]* inodes in chain' "$OUT" &&
   grep -q 'Size: 209715200 ' "$OUT"; then
	pass bigfile_stat_chain
else
	fail bigfile_stat_chain "$(grep -E 'Size|Chunks' "$OUT")"
fi
# Compare in a pipe: no second 200 MiB copy on disk.
if timeout -k 5 "$CMD_TIMEOUT" "$C" cat "$img" /big 2>"$TESTDIR/cat.err" | cmp -s - big.dat &&
   [ ! -s "$TESTDIR/cat.err" ]; then
	pass bigfile_cat_identical
else
	fail bigfile_cat_identical "differs: $(head -c 300 "$TESTDIR/cat.err")"
fi
# The file going away frees every continuation and block.
check_exit bigfile_rm 0 "$C" rm "$img" /big
if expect_exit 0 "$C" info --json "$img" && command -v python3 >/dev/null; then
	conts=$(python3 -c 'import json,sys; print(sum(x["conts"] for x in json.load(open(sys.argv[1]))["chunks"]))' "$OUT")
	[ "$conts" = 0 ] && pass bigfile_rm_frees_continuations || fail bigfile_rm_frees_continuations "conts=$conts"
fi
finish
