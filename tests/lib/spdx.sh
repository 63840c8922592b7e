#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every source file names its licence in an SPDX line in its first three
# lines: the library (src/, include/, chunkfs.pc.in) LGPL-2.1-or-later,
# everything else GPL-2.0-or-later.  COPYING and COPYING.LIB hold the texts.
# Run by tests/run.sh (make check); by hand: bash tests/lib/spdx.sh
. "$(dirname "$0")/../cli/lib.sh"
cd "$CHUNKFS_SRC" || exit 1

# Source files: git's list in a checkout, every file otherwise (a tarball).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
	mapfile -t files < <(find . -path ./build -prune -o -type f -print | sed 's|^\./||')
fi

want_licence() {
	case $1 in
	src/* | include/* | chunkfs.pc.in) echo LGPL-2.1-or-later ;;
	*) echo GPL-2.0-or-later ;;
	esac
}

is_source() {
	case $1 in
	tests/fsck/*/* | bench/results/* | build/*) return 1 ;;
	*.c | *.h | *.sh | *.py | *.in | *.service | *.timer | *.[1-8]) return 0 ;;
	Makefile | */Makefile | .gitignore | */.gitignore | .ci/run | debian/rules | completion/chunkfs) return 0 ;;
	esac
	return 1
}

n=0 missing=() wrong=()
for f in "${files[@]}"; do
	is_source "$f" || continue
	[ -f "$f" ] || continue
	n=$((n + 1))
	got=$(head -n 3 "$f" | sed -n 's/.*SPDX-License-Identifier: \([A-Za-z0-9.+-]*\).*/\1/p' | head -n 1)
	if [ -z "$got" ]; then
		missing+=("$f")
	elif [ "$got" != "$(want_licence "$f")" ]; then
		wrong+=("$f ($got, want $(want_licence "$f"))")
	fi
done

if [ "$n" -lt 100 ]; then
	fail spdx_files_found "only $n source files found under $CHUNKFS_SRC"
else
	pass spdx_files_found
fi
if [ ${#missing[@]} -eq 0 ]; then
	pass spdx_every_file
else
	fail spdx_every_file "no SPDX-License-Identifier line in: ${missing[*]}"
fi
if [ ${#wrong[@]} -eq 0 ]; then
	pass spdx_right_licence
else
	fail spdx_right_licence "${wrong[*]}"
fi
for t in COPYING:'GNU GENERAL PUBLIC LICENSE' COPYING.LIB:'GNU LESSER GENERAL PUBLIC LICENSE'; do
	if grep -q "${t#*:}" "${t%%:*}" 2>/dev/null; then
		pass "spdx_text_${t%%:*}"
	else
		fail "spdx_text_${t%%:*}" "${t%%:*} missing or not the licence text"
	fi
done
if grep -q '^License: LGPL-2.1+' debian/copyright && grep -q '^License: GPL-2+' debian/copyright; then
	pass spdx_debian_copyright
else
	fail spdx_debian_copyright "debian/copyright does not name both licences"
fi
finish
