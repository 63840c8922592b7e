#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One home for on-disk layouts: outside the format layer (src/format.h,
# format.c, format_node.c, le.h) no file of the library or the command
# reads or writes an on-disk field itself (get_le*/put_le*) or computes a
# checksum (crc32c), and no test computes one by hand either: the damage
# tools reseal through the format layer (tests/damage.h).  test_crc32c.c
# tests crc32c itself.  No test script (shell, or the Python it embeds)
# packs or unpacks on-disk fields (struct.pack*/unpack*) or computes a
# CRC-32C (its polynomial 0x82F63B78): scripts damage images through
# tests/cfsdamage.c or the chunkfs command.  Read from the sources.  Run by
# tests/run.sh (make check); by hand:  bash tests/lib/offsets.sh
. "$(dirname "$0")/../cli/lib.sh"

cd "$CHUNKFS_SRC" || exit 1

# FILE:LINE: text of every use of a byte helper or crc32c in code (comments
# are dropped first, so a comment may still name them).
uses() { # PATTERN FILE...
	local pat=$1 f
	shift
	for f in "$@"; do
		sed 's|//.*||' "$f" | awk -v f="$f" -v pat="$pat" '
			{ line = $0
			  while (1) {
				if (incomment) {
					e = index(line, "*/")
					if (!e) { line = ""; break }
					line = substr(line, e + 2); incomment = 0
				}
				s = index(line, "/*")
				if (!s) break
				rest = substr(line, s + 2)
				e = index(rest, "*/")
				if (e) line = substr(line, 1, s - 1) " " substr(rest, e + 2)
				else { line = substr(line, 1, s - 1); incomment = 1 }
			  }
			  if (line ~ pat) printf "%s:%d: %s\n", f, NR, $0 }'
	done
}

# NAME passes when BAD, the offending lines, is empty.
none() { # NAME BAD
	if [ -z "$2" ]; then
		pass "$1"
	else
		fail "$1" "$(echo "$2" | head -c 600)"
	fi
}

mapfile -t lib < <(find src tools daemon -name '*.[ch]' ! -name 'format.[ch]' ! -name format_node.c \
	! -name le.h ! -name 'crc32c.[ch]' | sort)
if [ "${#lib[@]}" -lt 20 ]; then
	fail offsets_sources "only ${#lib[@]} sources under src/, tools/ and daemon/"
	finish
fi
pass offsets_sources

none offsets_no_field_access_outside_format_layer "$(uses '(get|put)_le(16|32|64)?[ (]' "${lib[@]}")"

mapfile -t crc_users < <(find src tools daemon -name '*.[ch]' ! -name 'format.c' ! -name 'crc32c.[ch]' | sort)
mapfile -t tests < <(find tests -name '*.[ch]' ! -name test_crc32c.c | sort)
none offsets_checksums_only_in_format_layer "$(uses 'crc32c[a-z_]*[(]' "${crc_users[@]}" "${tests[@]}")"

# Test scripts: a field written by hand shows as Python's struct packing
# (the only way the scripts have to place a number at a byte offset), a
# checksum by hand as the CRC-32C polynomial.
hand_fields() { # FILE...
	grep -nEi 'struct\.(pack|unpack)|0x82f63b78' "$@"
}
mapfile -t scripts < <(find tests bench -name '*.sh' -o -name '*.py' | grep -v '^tests/lib/offsets\.sh$' | sort)
probe=$TESTDIR/probe.sh
printf '%s\n' "python3 - <<'EOF'" "import struct" \
	"struct.pack_into('<I', sb, 24, 1)" "EOF" >"$probe"
if [ "${#scripts[@]}" -ge 20 ] && [ -n "$(hand_fields "$probe")" ]; then
	pass offsets_script_check_sees_a_hand_field
else
	fail offsets_script_check_sees_a_hand_field "${#scripts[@]} scripts, probe not caught"
fi
none offsets_no_hand_fields_in_test_scripts "$(hand_fields "${scripts[@]}")"
finish
