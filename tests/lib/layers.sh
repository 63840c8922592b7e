#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The library's files form layers: no two of them (a folder under src/
# counts as one) call each other, directly or round a longer cycle.  Read
# from the symbols of the objects make built (BUILDDIR/obj/src).  Run by
# tests/run.sh (make check); by hand:
#   CHUNKFS=$PWD/build/chunkfs bash tests/lib/layers.sh
# With LAYERS_TABLE=1 it prints the layer table of docs/ARCHITECTURE.md
# instead (a file's level is one more than the highest level of the files
# whose symbols it uses), to paste there when files move.
. "$(dirname "$0")/../cli/lib.sh"

objdir=$(dirname "$CHUNKFS")/obj/src
mapfile -t objs < <(find "$objdir" -name '*.o' 2>/dev/null | sort)
if [ "${#objs[@]}" -lt 10 ]; then
	fail layers_objects "only ${#objs[@]} objects under $objdir"
	finish
fi
pass layers_objects

# "module symbol D|U" lines: a module is a file of src/, or a folder of it.
for o in "${objs[@]}"; do
	rel=${o#"$objdir"/}
	case $rel in
	*/*) m=${rel%%/*} ;;
	*) m=${rel%.o} ;;
	esac
	nm "$o" | awk -v m="$m" '
		$1 == "U" { print m, $2, "U"; next }
		NF == 3 && $2 ~ /^[TDBRVW]$/ { print m, $3, "D" }'
done >"$TESTDIR/.lib/syms"

# Edges a -> b (a uses a symbol b defines), then peel off modules that use
# no remaining module or that no remaining module uses: what cannot be
# peeled sits on a cycle.
if ! awk '
	$3 == "D" { def[$2] = $1; next }
	{ use[$1, $2] = 1; mods[$1] = 1 }
	END {
		for (k in use) {
			split(k, p, SUBSEP)
			b = def[p[2]]
			if (b != "" && b != p[1]) { edge[p[1], b] = 1; mods[b] = 1 }
		}
		for (m in mods) alive[m] = 1
		do {
			peeled = 0
			for (m in alive) {
				uses = 0; used = 0
				for (k in edge) {
					split(k, p, SUBSEP)
					if (p[1] == m && (p[2] in alive)) uses = 1
					if (p[2] == m && (p[1] in alive)) used = 1
				}
				if (!uses || !used) { delete alive[m]; peeled = 1 }
			}
		} while (peeled)
		for (k in edge) {
			split(k, p, SUBSEP)
			if ((p[1] in alive) && (p[2] in alive)) print p[1] " -> " p[2]
		}
	}' "$TESTDIR/.lib/syms" >"$TESTDIR/.lib/cycle"; then
	fail layers_no_cycle "the edge list could not be worked out (awk failed)"
	finish
fi
if [ -n "${LAYERS_TABLE:-}" ]; then
	awk '
		$3 == "D" { def[$2] = $1; mods[$1] = 1; next }
		{ use[$1, $2] = 1; mods[$1] = 1 }
		END {
			for (k in use) {
				split(k, p, SUBSEP)
				b = def[p[2]]
				if (b != "" && b != p[1]) edge[p[1], b] = 1
			}
			for (m in mods) lvl[m] = 0
			do {
				changed = 0
				for (k in edge) {
					split(k, p, SUBSEP)
					if (lvl[p[1]] < lvl[p[2]] + 1 && lvl[p[2]] < 1000) {
						lvl[p[1]] = lvl[p[2]] + 1
						changed = 1
					}
				}
			} while (changed)
			for (m in mods) print lvl[m], m
		}' "$TESTDIR/.lib/syms" | sort -k1,1n -k2 | while read -r l m; do
		[ -d "$objdir/$m" ] && m=$m/
		echo "$l \`$m\`"
	done | awk '
		BEGIN { print "| level | files |"; print "| --- | --- |" }
		$1 != l || NR == 1 { if (NR > 1) print row " |"; l = $1; row = "| " $1 " | " $2; next }
		{ row = row ", " $2 }
		END { if (NR) print row " |" }'
	exit 0
fi
cycle=$(sort "$TESTDIR/.lib/cycle")
if [ -z "$cycle" ]; then
	pass layers_no_cycle
else
	fail layers_no_cycle "calls among files on a cycle: $(echo $cycle | sed 's/ -> /->/g' | head -c 600)"
fi
finish
