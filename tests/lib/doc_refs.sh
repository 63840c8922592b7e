#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Many comments and pages cite "FORMAT.md 18", "POLICIES.md, section 4" or
# a file such as src/fsck/step_a.c.  When a section moves or a file is
# renamed the citations go stale silently, so every cited section must be
# a heading of the document cited, every "section N" inside FORMAT.md one
# of its own, and every src/, tools/, daemon/ or tests/ file named
# anywhere in the sources, docs or man pages must exist (a name in
# capitals, NAME.sh, is a placeholder).  Run by tests/run.sh (make
# check); by hand: bash tests/lib/doc_refs.sh
. "$(dirname "$0")/../cli/lib.sh"
cd "$CHUNKFS_SRC" || exit 1

# "## 18. Clean/dirty protocol", "### 10.4 Inode clusters" -> 18, 10.4
sections() {
	grep -oE '^##+ [0-9]+(\.[0-9]+)?' "$1" | awk '{ print $2 }'
}

# N.M that is no heading may be item M of section N's numbered list (the
# invariants of section 17: "FORMAT.md 17.13")
is_item() {
	local n=${2%%.*} m=${2#*.}
	[ "$n" != "$2" ] || return 1
	awk -v n="$n" '/^## / { on = ($2 == n ".") } on' "$1" | grep -qE "^ ?$m\. "
}

bad=()
for doc in FORMAT POLICIES; do
	have=" $(sections "docs/$doc.md" | tr '\n' ' ') "
	if [ "$have" = "  " ]; then
		fail "doc_refs_${doc}_sections" "no numbered section found in docs/$doc.md"
		continue
	fi
	while IFS=: read -r file line ref; do
		n=$(grep -oE '[0-9]+(\.[0-9]+)?$' <<<"$ref")
		[[ $have == *" $n "* ]] || is_item "docs/$doc.md" "$n" || bad+=("$file:$line: $ref")
	done < <(grep -rnoE "$doc\.md,? (sections? )?[0-9]+(\.[0-9]+)?" \
		src tools tests include docs man completion 2>/dev/null)
done
have=" $(sections docs/FORMAT.md | tr '\n' ' ') "
while IFS=: read -r line ref; do
	n=$(grep -oE '[0-9]+(\.[0-9]+)?$' <<<"$ref")
	[[ $have == *" $n "* ]] || is_item docs/FORMAT.md "$n" ||
		bad+=("docs/FORMAT.md:$line: $ref")
done < <(grep -noE '\bsections? [0-9]+(\.[0-9]+)?' docs/FORMAT.md)
if [ "${#bad[@]}" -eq 0 ]; then
	pass doc_refs_sections
else
	fail doc_refs_sections "citations of sections that do not exist: ${bad[*]}"
fi

missing=()
while IFS=: read -r file line path; do
	[[ $path =~ [A-Z]{4} ]] && continue
	[ -e "$path" ] || missing+=("$file:$line: $path")
done < <(grep -rnoE '\b(src|tools|daemon|tests)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|sh|md)\b' \
	src tools daemon tests include docs man completion debian Makefile 2>/dev/null)
if [ "${#missing[@]}" -eq 0 ]; then
	pass doc_refs_files
else
	fail doc_refs_files "files named that do not exist: ${missing[*]}"
fi
finish
