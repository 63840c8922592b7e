#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Manual pages (man/*.[58]): mandoc lint, and every command and option of
# each --help documented in its page and the reverse (man_coverage.py).
. "$(dirname "$0")/lib.sh"

MAN=$CHUNKFS_SRC/man
pages=(chunkfs.8 mkfs.chunkfs.8 fsck.chunkfs.8 mount.chunkfs.8 chunkfs-scrub.8 chunkfs.5)

for p in "${pages[@]}"; do
	if [ ! -f "$MAN/$p" ]; then
		fail "man_exists_$p" "$MAN/$p missing"
	elif ! command -v mandoc >/dev/null; then
		# scripts/deps.sh installs mandoc; without it a lint would not lint
		skip "man_lint_$p" "mandoc not installed (bash scripts/deps.sh)"
	elif expect_exit 0 mandoc -T lint -W warning "$MAN/$p"; then
		pass "man_lint_$p"
	else
		fail "man_lint_$p" "$(head -c 300 "$OUT")"
	fi
done

if ! command -v python3 >/dev/null; then
	skip man_coverage "python3 not installed"
	finish
fi
for p in "${pages[@]}"; do
	[ "$p" = chunkfs.5 ] && continue
	if expect_exit 0 python3 "$CHUNKFS_SRC/tests/cli/man_coverage.py" \
		"$CHUNKFS" "$MAN" "$p"; then
		pass "man_coverage_$p"
	else
		fail "man_coverage_$p" "$(head -c 600 "$OUT")"
	fi
done

# The checker sees drift both ways: a page missing an option, and a page
# documenting one --help does not have.
mkdir -p drift
sed -e '/^\.It Fl q$/,+1d' "$MAN/mkfs.chunkfs.8" | grep -v '^\.Op Fl q$' >drift/mkfs.chunkfs.8
sed -e 's/^\.It Cm nocheck$/.It Cm nosuchopt/' "$MAN/mount.chunkfs.8" >drift/mount.chunkfs.8
sed -e 's/^\.It Cm mv /.It Cm nosuchcmd /' "$MAN/chunkfs.8" >drift/chunkfs.8
if expect_exit 1 python3 "$CHUNKFS_SRC/tests/cli/man_coverage.py" "$CHUNKFS" drift mkfs.chunkfs.8 &&
   grep -q 'option -q: in --help, not in the page' "$OUT"; then
	pass man_coverage_sees_missing_option
else
	fail man_coverage_sees_missing_option "$(head -c 300 "$OUT")"
fi
if expect_exit 1 python3 "$CHUNKFS_SRC/tests/cli/man_coverage.py" "$CHUNKFS" drift mount.chunkfs.8 &&
   grep -q 'mount option nosuchopt: in the page, not in --help' "$OUT" &&
   grep -q 'mount option nocheck: in --help, not in the page' "$OUT"; then
	pass man_coverage_sees_mount_option_drift
else
	fail man_coverage_sees_mount_option_drift "$(head -c 300 "$OUT")"
fi
if expect_exit 1 python3 "$CHUNKFS_SRC/tests/cli/man_coverage.py" "$CHUNKFS" drift chunkfs.8 &&
   grep -q 'command mv: in --help, not in the page' "$OUT" &&
   grep -q 'command nosuchcmd: in the page, not in --help' "$OUT"; then
	pass man_coverage_sees_command_drift
else
	fail man_coverage_sees_command_drift "$(head -c 300 "$OUT")"
fi
finish
