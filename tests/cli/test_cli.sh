#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# CLI tests of the chunkfs command: usage and option checking, mkfs, info
# (text and JSON), offline file access, tree round trips, error behaviour
# and damaged images.  See tests/cli/lib.sh for the protocol.
# shellcheck disable=SC2016,SC2015,SC1091,SC2154
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
HAVE_PY=0
command -v python3 >/dev/null && HAVE_PY=1

sum() { sha256sum "$1" | cut -d' ' -f1; }

# jq-like access to the JSON in $OUT: jget 'd["chunks"][0]["state"]'
jget() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$OUT" "$1"
}

# err_has NAME TEXT...: pass if $ERR contains every TEXT (fixed strings).
err_has() {
	local name=$1 t
	shift
	for t in "$@"; do
		if ! grep -qF -- "$t" "$ERR"; then
			fail "$name" "stderr lacks '$t': $(head -c 300 "$ERR")"
			return 1
		fi
	done
	pass "$name"
}

# check_err NAME CODE TEXT CMD...: exits CODE and stderr mentions TEXT.
check_err() {
	local name=$1 code=$2 text=$3
	shift 3
	if expect_exit "$code" "$@"; then
		err_has "$name" "$text"
	else
		fail "$name" "'$*' did not exit $code"
	fi
}

# no_crash NAME CMD...: any ordinary exit (0..125) and no sanitizer report.
no_crash() {
	local name=$1 rc
	shift
	timeout -k 5 "$CMD_TIMEOUT" "$@" >"$OUT" 2>"$ERR" </dev/null
	rc=$?
	if [ "$rc" -gt 125 ]; then
		fail "$name" "exit $rc (crash or timeout): $(tail -n 5 "$ERR")"
	elif grep -Eq "$_t_san_re" "$ERR"; then
		fail "$name" "sanitizer report: $(grep -E "$_t_san_re" "$ERR" | head -n 3)"
	else
		pass "$name"
	fi
}

randfile() { head -c "$2" /dev/urandom >"$1"; }

# ==== usage ================================================================

check_exit help_exit0 0 "$C" --help
grep -q '^usage: chunkfs' "$OUT" && pass help_to_stdout || fail help_to_stdout "no usage on stdout"
check_exit version 0 "$C" --version
grep -q '^chunkfs [0-9]' "$OUT" && pass version_text || fail version_text "$(cat "$OUT")"
for cmd in mkfs info ls stat cat get put mkdir rm ln mv; do
	if expect_exit 0 "$C" "$cmd" --help && grep -q "usage: chunkfs $cmd" "$OUT"; then
		pass "help_$cmd"
	else
		fail "help_$cmd" "no usage on stdout"
	fi
done
check_err no_command 2 "no command" "$C"
check_err unknown_command 2 "'frobnicate'" "$C" frobnicate x.img
check_err unknown_option 2 "'-Z'" "$C" ls -Z x.img
check_err unknown_long_option 2 "'--bogus'" "$C" info --bogus x.img
check_err missing_optarg 2 "'-c'" "$C" mkfs x.img 16M -c
check_err missing_image 2 "no IMAGE" "$C" ls
check_err too_many_args 2 "too many" "$C" mv x.img a b c
[ -s "$ERR" ] && grep -q usage "$ERR" && pass usage_on_stderr || fail usage_on_stderr "no usage on stderr"

ln -s "$C" mkfs.chunkfs
ln -s "$C" fsck.chunkfs
check_exit mkfs_dot_chunkfs 0 ./mkfs.chunkfs -q viamkfs.img 8M
check_exit mkfs_dot_chunkfs_result 0 "$C" info viamkfs.img
check_exit fsck_dot_chunkfs_clean 0 ./fsck.chunkfs -n viamkfs.img
grep -q "checked 0 of" "$OUT" && pass fsck_dot_chunkfs_says_what || fail fsck_dot_chunkfs_says_what "$(cat "$OUT")"
check_err fsck_needs_mode 8 "need a terminal" ./fsck.chunkfs viamkfs.img
check_exit fsck_usage 16 ./fsck.chunkfs -j 0 viamkfs.img

# ==== mkfs =================================================================

img=$TESTDIR/m.img
uuid=01234567-89ab-cdef-0123-456789abcdef
check_exit mkfs_all_options 0 "$C" mkfs -b 1024 -c 4 -L mylabel -N 2048 -I 512 -U "$uuid" "$img" 32M
grep -q "Block size: *1024" "$OUT" && grep -q "Chunks: *4" "$OUT" && grep -q mylabel "$OUT" &&
	pass mkfs_summary || fail mkfs_summary "$(cat "$OUT")"
if [ $HAVE_PY = 1 ] && expect_exit 0 "$C" info --json "$img"; then
	got=$(jget '"%s %s %s %s %s" % (d["block_size"], d["chunk_count"], d["label"], d["inode_size"], d["chunk_count"] * d["inodes_per_chunk"] >= 2048)')
	[ "$got" = "1024 4 mylabel 512 True" ] && pass mkfs_options_applied ||
		fail mkfs_options_applied "got '$got'"
	got=$(jget 'd["uuid"]')
	[ "$got" = "$uuid" ] && pass mkfs_uuid_kept || fail mkfs_uuid_kept "asked for $uuid, got $got"
	got=$(jget 'd["total_blocks"] * d["block_size"]')
	[ "$got" -le 33554432 ] && [ "$got" -gt $((33554432 - 8192)) ] && pass mkfs_size_used ||
		fail mkfs_size_used "filesystem spans $got bytes of 33554432"
	[ "$(jget 'len(d["chunks"])')" = 4 ] && pass info_json_chunk_rows || fail info_json_chunk_rows "$(cat "$OUT")"
else
	skip mkfs_options_applied "python3 missing or info failed"
fi

before=$(sum "$img")
check_err mkfs_refuses_existing 1 "contains a chunkfs filesystem; use -F" "$C" mkfs "$img" 32M
[ "$(sum "$img")" = "$before" ] && pass mkfs_refusal_keeps_image || fail mkfs_refusal_keeps_image "image changed"
check_exit mkfs_force 0 "$C" mkfs -F -q "$img"
[ ! -s "$OUT" ] && pass mkfs_quiet || fail mkfs_quiet "printed: $(head -c 200 "$OUT")"
expect_exit 0 "$C" info "$img"
grep -q "$uuid" "$OUT" && fail mkfs_force_new_uuid "UUID kept" || pass mkfs_force_new_uuid

check_err mkfs_needs_size 2 "SIZE" "$C" mkfs "$TESTDIR/nosuch.img"
[ ! -e "$TESTDIR/nosuch.img" ] && pass mkfs_no_size_no_file || fail mkfs_no_size_no_file "file created"
truncate -s 16M existing.img
check_exit mkfs_existing_file_size 0 "$C" mkfs -q existing.img
if [ $HAVE_PY = 1 ] && expect_exit 0 "$C" info --json existing.img; then
	[ "$(jget 'd["total_blocks"] * d["block_size"]')" = 16777216 ] && pass mkfs_uses_file_size ||
		fail mkfs_uses_file_size "$(head -20 "$OUT")"
fi

for s in 8388608:8388608 8192k:8388608 8M:8388608 8m:8388608 1g:1073741824 1G:1073741824; do
	rm -f s.img
	if expect_exit 0 "$C" mkfs -q s.img "${s%%:*}" && [ "$(stat -c %s s.img)" = "${s#*:}" ]; then
		pass "mkfs_size_${s%%:*}"
	else
		fail "mkfs_size_${s%%:*}" "file size $(stat -c %s s.img 2>/dev/null)"
	fi
done
rm -f s.img

# Each bad value must be named in the message, exit 2, and create nothing.
bad_opt() {
	local name=$1 val=$2
	shift 2
	rm -f bad.img
	check_err "$name" 2 "$val" "$C" mkfs "$@"
	[ ! -e bad.img ] || fail "${name}_no_file" "bad.img was created"
}
bad_opt mkfs_bad_bs_3000 "'3000'" -b 3000 bad.img 16M
bad_opt mkfs_bad_bs_128k "'128K'" -b 128K bad.img 16M
bad_opt mkfs_bad_bs_512 "'512'" -b 512 bad.img 16M
bad_opt mkfs_bad_chunks_0 "'0'" -c 0 bad.img 16M
bad_opt mkfs_bad_chunks_257 "'257'" -c 257 bad.img 16M
bad_opt mkfs_bad_chunks_x "'x'" -c x bad.img 16M
bad_opt mkfs_bad_label "'$(printf 'L%.0s' {1..64})'" -L "$(printf 'L%.0s' {1..64})" bad.img 16M
bad_opt mkfs_bad_inodes_0 "'0'" -N 0 bad.img 16M
bad_opt mkfs_bad_inodes_abc "'abc'" -N abc bad.img 16M
bad_opt mkfs_bad_isize_100 "'100'" -I 100 bad.img 16M
bad_opt mkfs_bad_isize_gt_bs "8192" -I 8192 bad.img 16M
bad_opt mkfs_bad_uuid "'nonsense'" -U nonsense bad.img 16M
bad_opt mkfs_bad_size_suffix "'12X'" bad.img 12X
bad_opt mkfs_bad_size_zero "'0'" bad.img 0
bad_opt mkfs_bad_size_negative "'-5'" bad.img -- -5
bad_opt mkfs_bad_size_fraction "'1.5G'" bad.img 1.5G
bad_opt mkfs_bad_size_overflow "'99999999999T'" bad.img 99999999999T
bad_opt mkfs_bad_size_kb "'8KB'" bad.img 8KB
check_err mkfs_dir_target 1 "Is a directory" "$C" mkfs -q "$TESTDIR" 16M

# ==== info ==================================================================

label=$'q"uo\\te\x01\ttab'
check_exit mkfs_odd_label 0 "$C" mkfs -q -L "$label" -c 4 lab.img 16M
if [ $HAVE_PY = 1 ]; then
	if expect_exit 0 "$C" info --json lab.img && python3 -m json.tool "$OUT" >/dev/null; then
		pass info_json_valid
	else
		fail info_json_valid "$(head -c 500 "$OUT")"
	fi
	printf '%s' "$label" >want_label
	python3 -c 'import json,sys; sys.stdout.buffer.write(json.load(open(sys.argv[1]))["label"].encode("latin-1"))' \
		"$OUT" >got_label 2>/dev/null
	cmp -s want_label got_label && pass info_json_label_escaped || fail info_json_label_escaped "label did not round trip"
	[ "$(jget 'sorted(d["chunks"][0].keys()) == sorted(["index","state","state_code","generation","last_check","last_write","blocks","used_blocks","free_blocks","inodes","used_inodes","free_inodes","conts","xrefs","clusters","errors"])')" = True ] &&
		pass info_json_chunk_fields || fail info_json_chunk_fields "$(jget 'd["chunks"][0]')"
	[ "$(jget 'all(c["state"] == "clean" for c in d["chunks"])')" = True ] &&
		pass info_fresh_all_clean || fail info_fresh_all_clean "not all clean"
else
	skip info_json_valid "python3 not installed"
fi
if expect_exit 0 "$C" info lab.img; then
	grep -q 'Block size: *4096' "$OUT" && [ "$(grep -cE '^ +[0-9]+  clean ' "$OUT")" = 4 ] &&
		! grep -q $'\x01' "$OUT" && pass info_text || fail info_text "$(cat "$OUT")"
else
	fail info_text "info failed"
fi

# ==== put / cat =============================================================

img=$TESTDIR/f.img
"$C" mkfs -q -c 8 "$img" 64M
inline=108
if [ $HAVE_PY = 1 ] && expect_exit 0 "$C" info --json "$img"; then
	inline=$(jget 'd["inline_max"]')
fi
for n in 0 1 2 60 $((inline - 1)) $inline $((inline + 1)) 4095 4096 4097 12305 1048576 1048577 5242880; do
	randfile "data.$n" "$n"
	if expect_exit 0 "$C" put "$img" "data.$n" "/data.$n" &&
	   expect_exit 0 "$C" cat "$img" "/data.$n" && cmp -s "$OUT" "data.$n"; then
		pass "put_cat_$n"
	else
		fail "put_cat_$n" "content differs or command failed"
	fi
done
head -c 100000 /dev/zero >zeros
printf '\0a\0\0b' >>zeros
if expect_exit 0 "$C" put "$img" zeros /zeros && expect_exit 0 "$C" cat "$img" /zeros && cmp -s "$OUT" zeros; then
	pass put_cat_zero_bytes
else
	fail put_cat_zero_bytes "differs"
fi
if expect_exit 0 "$C" cat "$img" /data.1 /data.4097 && cat data.1 data.4097 | cmp -s - "$OUT"; then
	pass cat_several
else
	fail cat_several "differs"
fi
if expect_exit 0 "$C" stat "$img" "/data.$inline" && grep -qE 'Blocks: 0 ' "$OUT"; then
	pass inline_file_no_blocks
else
	fail inline_file_no_blocks "$(grep Blocks "$OUT")"
fi
randfile stdin.dat 30000
if expect_exit 0 "$C" put "$img" - /fromstdin <stdin.dat && expect_exit 0 "$C" cat "$img" /fromstdin &&
   cmp -s "$OUT" stdin.dat; then
	pass put_stdin
else
	fail put_stdin "differs"
fi
# Sparse: 16 MiB with data at 0, 5 MiB and the last byte.
rm -f sparse && truncate -s 16M sparse
printf 'head' | dd of=sparse conv=notrunc status=none
randfile chunk 8192 && dd if=chunk of=sparse bs=1M seek=5 conv=notrunc status=none
printf 'z' | dd of=sparse bs=1 seek=$((16 * 1048576 - 1)) conv=notrunc status=none
if expect_exit 0 "$C" put "$img" sparse /sparse && expect_exit 0 "$C" cat "$img" /sparse && cmp -s "$OUT" sparse; then
	pass put_sparse_content
else
	fail put_sparse_content "differs"
fi
if expect_exit 0 "$C" stat "$img" /sparse; then
	b=$(sed -n 's/.*Blocks: \([0-9]*\).*/\1/p' "$OUT")
	[ -n "$b" ] && [ "$b" -lt 2048 ] && pass put_sparse_keeps_holes || fail put_sparse_keeps_holes "blocks=$b"
fi
if expect_exit 0 "$C" get "$img" /sparse sparse.out && cmp -s sparse sparse.out; then
	pass get_sparse_content
	[ "$(stat -c %b sparse.out)" -lt 4096 ] && pass get_sparse_keeps_holes ||
		fail get_sparse_keeps_holes "$(stat -c %b sparse.out) blocks"
else
	fail get_sparse_content "differs"
fi
# Overwriting a file replaces its content; into a directory uses the basename.
randfile data.new 777
check_exit put_overwrite 0 "$C" put "$img" data.new /data.4096
expect_exit 0 "$C" cat "$img" /data.4096 && cmp -s "$OUT" data.new && pass put_overwrite_content || fail put_overwrite_content "old content"
"$C" mkdir "$img" /into
check_exit put_into_dir 0 "$C" put "$img" data.1 /into
check_exit put_into_dir_basename 0 "$C" cat "$img" /into/data.1
check_exit put_relative_dest 0 "$C" put "$img" data.2 into/rel
check_exit cat_relative_path 0 "$C" cat "$img" into/rel
cmp -s "$OUT" data.2 && pass relative_paths || fail relative_paths "differs"
check_err put_dir_without_r 1 "use -r" "$C" put "$img" "$TESTDIR" /x
check_err put_missing_parent 1 "$img:/nope/f: No such file or directory" "$C" put "$img" data.1 /nope/f
check_err put_missing_source 1 "nosuchfile: No such file or directory" "$C" put "$img" nosuchfile /x
check_err cat_missing 1 "$img:/nosuch: No such file or directory" "$C" cat "$img" /nosuch
check_err cat_dir 1 "$img:/into: Is a directory" "$C" cat "$img" /into
check_err cat_notdir 1 "$img:/data.1/x: Not a directory" "$C" cat "$img" /data.1/x
check_err get_dir_without_r 1 "use -r" "$C" get "$img" /into outdir
if expect_exit 0 "$C" get "$img" /data.4097 got.4097 && cmp -s got.4097 data.4097; then
	pass get_file
else
	fail get_file "differs"
fi
if expect_exit 0 "$C" info --json "$img" && [ $HAVE_PY = 1 ]; then
	[ "$(jget 'sum(1 for c in d["chunks"] if c["state"] != "clean")')" = 0 ] && pass chunks_clean_after_writes ||
		fail chunks_clean_after_writes "dirty chunks left"
fi

# Read-only commands never write the image.
before=$(sum "$img")
"$C" ls -laR "$img" / >/dev/null 2>&1
"$C" cat "$img" /data.5242880 >/dev/null 2>&1
"$C" stat "$img" /sparse >/dev/null 2>&1
"$C" info --json "$img" >/dev/null 2>&1
rm -rf ro.out && "$C" get -r "$img" / ro.out >/dev/null 2>&1
[ "$(sum "$img")" = "$before" ] && pass readonly_commands_keep_image || fail readonly_commands_keep_image "image changed"

# ==== namespace operations ==================================================

img=$TESTDIR/n.img
"$C" mkfs -q -c 4 "$img" 32M
randfile f1 5000
"$C" put "$img" f1 /file
check_exit mkdir_basic 0 "$C" mkdir "$img" /d
check_err mkdir_eexist 1 "$img:/d: File exists" "$C" mkdir "$img" /d
check_err mkdir_enoent 1 "No such file or directory" "$C" mkdir "$img" /nope/x
check_exit mkdir_p 0 "$C" mkdir -p "$img" /p/q/r
check_exit mkdir_p_again 0 "$C" mkdir -p "$img" /p/q/r /p
check_err mkdir_p_enotdir 1 "Not a directory" "$C" mkdir -p "$img" /file/x
check_exit mkdir_mode 0 "$C" mkdir -m 0700 "$img" /m
expect_exit 0 "$C" ls -ld "$img" /m && grep -q '^drwx------ ' "$OUT" && pass mkdir_mode_applied || fail mkdir_mode_applied "$(cat "$OUT")"
check_err mkdir_bad_mode 2 "'999'" "$C" mkdir -m 999 "$img" /m2
check_exit mkdir_several 0 "$C" mkdir "$img" /s1 /s2 s3
expect_exit 0 "$C" ls "$img" /
[ "$(grep -cE '^(s1|s2|s3)$' "$OUT")" = 3 ] && pass mkdir_several_made || fail mkdir_several_made "$(cat "$OUT")"
expect_exit 0 "$C" ls -a "$img" /
grep -qx '\.' "$OUT" && grep -qx '\.\.' "$OUT" && pass ls_a_dots || fail ls_a_dots "$(cat "$OUT")"
expect_exit 0 "$C" ls "$img" /
grep -q '^\.' "$OUT" && fail ls_hides_dots "$(cat "$OUT")" || pass ls_hides_dots
check_err ls_missing 1 "$img:/nosuch: No such file or directory" "$C" ls "$img" /nosuch

check_exit ln_hard 0 "$C" ln "$img" /file /d/hard
expect_exit 0 "$C" stat "$img" /file && grep -q 'Links: 2 ' "$OUT" && pass ln_hard_nlink || fail ln_hard_nlink "$(grep Links "$OUT")"
check_exit ln_hard_same_data 0 "$C" cat "$img" /d/hard
cmp -s "$OUT" f1 && pass ln_hard_content || fail ln_hard_content "differs"
check_err ln_hard_dir 1 "hard link not allowed" "$C" ln "$img" /d /dlink
check_err ln_eexist 1 "File exists" "$C" ln "$img" /file /d/hard
check_err ln_missing_target 1 "$img:/nosuch: No such file or directory" "$C" ln "$img" /nosuch /x
check_exit ln_symlink 0 "$C" ln -s "$img" ../file /d/sym
expect_exit 0 "$C" ls -l "$img" /d && grep -q 'sym -> \.\./file$' "$OUT" && pass ln_symlink_ls || fail ln_symlink_ls "$(cat "$OUT")"
check_exit cat_via_symlink 0 "$C" cat "$img" /d/sym
cmp -s "$OUT" f1 && pass symlink_followed || fail symlink_followed "differs"
check_exit ln_into_dir 0 "$C" ln "$img" /file /p
check_exit ln_into_dir_made 0 "$C" stat "$img" /p/file

check_exit mv_rename 0 "$C" mv "$img" /s1 /s1renamed
check_err mv_old_gone 1 "No such file or directory" "$C" stat "$img" /s1
check_exit mv_into_dir 0 "$C" mv "$img" /s1renamed /p
check_exit mv_into_dir_made 0 "$C" stat "$img" /p/s1renamed
check_err mv_missing 1 "No such file or directory" "$C" mv "$img" /nosuch /x
check_err mv_into_self 1 "$img:/p" "$C" mv "$img" /p /p/q/inside
check_exit mv_replace_file 0 "$C" mv "$img" /p/file /d/hard
"$C" mkdir -p "$img" /p/s2/inner
check_err mv_dir_over_nonempty 1 "Directory not empty" "$C" mv "$img" /s2 /p

check_err rm_enoent 1 "$img:/nosuch: No such file or directory" "$C" rm "$img" /nosuch
check_exit rm_f_enoent 0 "$C" rm -f "$img" /nosuch
check_err rm_dir_needs_r 1 "is a directory" "$C" rm "$img" /p
check_err rm_d_enotempty 1 "Directory not empty" "$C" rm -d "$img" /p
check_exit rm_d_empty 0 "$C" rm -d "$img" /s2
check_err rm_enotdir 1 "Not a directory" "$C" rm "$img" /file/x
check_err rm_root 1 "root directory" "$C" rm -r "$img" /
check_exit rm_r 0 "$C" rm -r "$img" /p
check_err rm_r_gone 1 "No such file or directory" "$C" ls "$img" /p
check_exit rm_file 0 "$C" rm "$img" /file
expect_exit 0 "$C" stat "$img" /d/hard && grep -q 'Links: 1 ' "$OUT" && pass rm_drops_nlink || fail rm_drops_nlink "$(grep Links "$OUT")"
check_exit rm_several 0 "$C" rm -r "$img" /d /m s3
if [ $HAVE_PY = 1 ] && expect_exit 0 "$C" info --json "$img"; then
	[ "$(jget 'd["totals"]["used_inodes"]')" = 2 ] && pass rm_frees_inodes ||
		fail rm_frees_inodes "used inodes $(jget 'd["totals"]["used_inodes"]'), want 2 (root, lost+found)"
fi

# ==== inode numbers carry the chunk ========================================

img=$TESTDIR/i.img
"$C" mkfs -q -c 8 "$img" 64M
for i in 1 2 3 4 5 6 7 8; do "$C" mkdir "$img" "/top$i"; "$C" put "$img" data.1 "/top$i/f"; done
"$C" ls -i "$img" / >ls_i.out 2>/dev/null
ok=1 nonzero=0
while read -r ino name; do
	"$C" stat "$img" "/$name" >st.out 2>/dev/null || { ok=0; break; }
	chunk=$(sed -n 's/.*(chunk \([0-9]*\), local.*/\1/p' st.out)
	[ "$((ino >> 24))" = "$chunk" ] && grep -q "Inode: $ino " st.out || { ok=0; break; }
	[ "$chunk" != 0 ] && nonzero=1
done <ls_i.out
[ -s ls_i.out ] && [ $ok = 1 ] && pass ls_i_top_bits_are_chunk || fail ls_i_top_bits_are_chunk "$(cat ls_i.out)"
[ $nonzero = 1 ] && pass top_dirs_spread_over_chunks || fail top_dirs_spread_over_chunks "all in chunk 0: $(cat ls_i.out)"
"$C" ls -li "$img" /top1 >lsli.out 2>&1
grep -qE '^ *[0-9]+ -rw-r--r-- 1 [0-9]+ [0-9]+ +1 [0-9-]+ [0-9:]+ f$' lsli.out && pass ls_li_format || fail ls_li_format "$(cat lsli.out)"

# ==== put -r / get -r round trip ===========================================

mk_tree() {
	local t=$1
	mkdir -p "$t/sub/deeper/deepest" "$t/empty dir" "$t/sticky"
	randfile "$t/plain" 20000
	randfile "$t/sub/big" 3000000
	randfile "$t/sub/deeper/deepest/leaf" 333
	: >"$t/empty"
	: >"$t/sub/empty2"
	printf 'inline' >"$t/tiny"
	randfile "$t/with space" 100
	randfile "$t/new"$'\n'"line" 50
	randfile "$t/ütf8-日本語" 70
	randfile "$t/-dash" 10
	randfile "$t/mode600" 10 && chmod 0600 "$t/mode600"
	randfile "$t/mode755" 10 && chmod 0755 "$t/mode755"
	randfile "$t/mode4755" 10 && chmod 4755 "$t/mode4755"
	randfile "$t/mode2750" 10 && chmod 2750 "$t/mode2750"
	chmod 1777 "$t/sticky"
	chmod 0700 "$t/sub/deeper"
	ln "$t/plain" "$t/sub/hardlink"
	ln "$t/plain" "$t/sub/deeper/hardlink2"
	ln "$t/tiny" "$t/tiny-link"
	ln -s plain "$t/rel-symlink"
	ln -s /etc/passwd "$t/abs-symlink"
	ln -s nowhere "$t/dangling"
	ln -s ../plain "$t/sub/up-symlink"
	mkfifo "$t/fifo"
	truncate -s 3M "$t/sparse" && printf 'mid' | dd of="$t/sparse" bs=1 seek=1000000 conv=notrunc status=none
	if [ "$(id -u)" = 0 ]; then
		mknod "$t/null-dev" c 1 3
		mknod "$t/blk-dev" b 7 200
		chown 1234:5678 "$t/plain" "$t/sub"
		chown -h 4321:8765 "$t/rel-symlink"
	fi
	touch -h -d '2001-02-03 04:05:06.123456789' "$t/plain" "$t/rel-symlink" "$t/fifo" "$t/empty"
	touch -d '1999-12-31 23:59:59.987654321' "$t/sub/deeper/deepest" "$t/sub"
	touch -d '1970-01-01 00:00:01.5' "$t/mode755"
}
# Everything diff does not look at: type, mode, size, mtime (ns), links,
# owner, link target.  Directory sizes are the host's business.
meta() {
	(cd "$1" && find . -printf '%P|%y|%m|%n|%U:%G|%T@|%l|' -a \( -type d -printf '\n' -o -printf '%s\n' \) | LC_ALL=C sort)
}

rm -rf tree && mkdir tree && mk_tree "$TESTDIR/tree"
touch -d '2010-10-10 10:10:10.101010101' tree
xattrs=0
if [ $HAVE_PY = 1 ] && python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.chunkfs", b"v\0al")' tree/plain 2>/dev/null; then
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.other", b"x" * 300)' tree/sub
	xattrs=1
	[ "$(id -u)" = 0 ] && python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.chunkfs", b"t")' tree/tiny 2>/dev/null &&
		xattrs=2
fi
img=$TESTDIR/r.img
"$C" mkfs -q -c 16 "$img" 128M
if expect_exit 0 "$C" put -r "$img" tree /t; then
	pass put_r
	[ ! -s "$ERR" ] && pass put_r_quiet_when_not_tty || fail put_r_quiet_when_not_tty "$(head -c 300 "$ERR")"
else
	fail put_r "put -r failed"
fi
rm -rf out
if expect_exit 0 "$C" get -r "$img" /t out; then pass get_r; else fail get_r "get -r failed"; fi
diff -r --no-dereference tree out 2>&1 | grep -vE 'is a (fifo|character special file|block special file) while file ' >diff.out
[ ! -s diff.out ] && pass roundtrip_diff || fail roundtrip_diff "$(head -c 500 diff.out)"
meta tree >meta.in
meta out >meta.out
if cmp -s meta.in meta.out; then
	pass roundtrip_metadata
else
	fail roundtrip_metadata "$(diff meta.in meta.out | head -n 12)"
fi
[ "$(stat -c %i out/plain)" = "$(stat -c %i out/sub/hardlink)" ] &&
	[ "$(stat -c %i out/plain)" = "$(stat -c %i out/sub/deeper/hardlink2)" ] &&
	[ "$(stat -c %h out/plain)" = 3 ] && pass roundtrip_hardlinks || fail roundtrip_hardlinks "links not kept"
if expect_exit 0 "$C" stat "$img" /t/plain && grep -q 'Links: 3 ' "$OUT"; then
	pass put_r_hardlink_nlink
else
	fail put_r_hardlink_nlink "$(grep Links "$OUT")"
fi
[ -p out/fifo ] && pass roundtrip_fifo || fail roundtrip_fifo "not a fifo"
[ "$(readlink out/abs-symlink)" = /etc/passwd ] && [ -L out/dangling ] && pass roundtrip_symlinks || fail roundtrip_symlinks "targets"
if [ "$(id -u)" = 0 ]; then
	[ "$(stat -c '%t:%T %F' out/null-dev)" = "1:3 character special file" ] &&
		[ "$(stat -c '%t:%T %F' out/blk-dev)" = "7:c8 block special file" ] &&
		pass roundtrip_devices || fail roundtrip_devices "$(stat -c '%t:%T %F' out/null-dev out/blk-dev)"
else
	skip roundtrip_devices "not root"
fi
[ "$(stat -c %b out/sparse)" -lt 1024 ] && pass roundtrip_sparse_holes || fail roundtrip_sparse_holes "$(stat -c %b out/sparse) blocks"
if [ $xattrs -ge 1 ]; then
	got=$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.chunkfs") == b"v\0al" and os.getxattr(sys.argv[2], "user.other") == b"x" * 300)' out/plain out/sub 2>&1)
	[ "$got" = True ] && pass roundtrip_xattrs || fail roundtrip_xattrs "$got"
	if [ $xattrs = 2 ]; then
		got=$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "trusted.chunkfs") == b"t")' out/tiny 2>&1)
		[ "$got" = True ] && pass roundtrip_trusted_xattr || fail roundtrip_trusted_xattr "$got"
	fi
	expect_exit 0 "$C" stat "$img" /t/plain && grep -q 'user.chunkfs' "$OUT" && pass stat_lists_xattrs || fail stat_lists_xattrs "$(cat "$OUT")"
else
	skip roundtrip_xattrs "no user xattrs on $TESTDIR"
fi
if expect_exit 0 "$C" stat "$img" /t/plain && grep -q 'Modify: 2001-02-03 04:05:06.123456789' "$OUT"; then
	pass stat_ns_mtime
else
	fail stat_ns_mtime "$(grep Modify "$OUT")"
fi
if expect_exit 0 "$C" ls "$img" /t && grep -qx 'ütf8-日本語' "$OUT" && grep -qx 'with space' "$OUT"; then
	pass ls_odd_names
else
	fail ls_odd_names "$(cat "$OUT")"
fi
# Into an existing directory: under the source's basename, like cp -r.
mkdir -p existing
if expect_exit 0 "$C" get -r "$img" /t/sub existing && [ -f existing/sub/big ] && cmp -s existing/sub/big tree/sub/big; then
	pass get_r_into_dir
else
	fail get_r_into_dir "not at existing/sub"
fi
check_exit put_r_into_dir 0 "$C" put -r "$img" tree/sub /t/sub/deeper
check_exit put_r_into_dir_made 0 "$C" cat "$img" /t/sub/deeper/sub/big
cmp -s "$OUT" tree/sub/big && pass put_r_into_dir_content || fail put_r_into_dir_content differs
# Copying out over an existing tree replaces files and keeps going.
if expect_exit 0 "$C" get -r "$img" /t out; then pass get_r_again; else fail get_r_again "second get -r failed"; fi
# The image itself inside the source tree is skipped, not copied into itself.
mkdir -p selfsrc && randfile selfsrc/x 10
"$C" mkfs -q -c 2 selfsrc/self.img 16M
check_exit put_r_skips_image 0 "$C" put -r selfsrc/self.img selfsrc /s
grep -q 'image being written' "$ERR" && pass put_r_warns_self || fail put_r_warns_self "$(cat "$ERR")"
# Progress line only on a terminal.
if command -v script >/dev/null; then
	script -qec "$C put -r $img tree /tty-copy" /dev/null >tty.out 2>&1 </dev/null
	grep -q 'files, ' tty.out && pass progress_on_tty || fail progress_on_tty "$(head -c 300 tty.out)"
else
	skip progress_on_tty "script(1) not installed"
fi
if expect_exit 0 "$C" info --json "$img" && [ $HAVE_PY = 1 ]; then
	[ "$(jget 'd["totals"]["dirty_chunks"]')" = 0 ] && pass clean_after_tree_copy || fail clean_after_tree_copy "dirty"
fi

# ==== damaged images ========================================================

good=$TESTDIR/good.img
"$C" mkfs -q -c 4 "$good" 16M
"$C" put "$good" data.4097 /file
"$C" mkdir "$good" /dir
damaged_case() {
	local kind=$1 img=$2 want=$3 cmd before
	before=$(sum "$img")
	for cmd in "info" "info --json" "ls -lR" "stat" "cat" "get" "put" "mkdir" "rm" "ln" "mv"; do
		local args=()
		case $cmd in
		stat | cat) args=(/file) ;;
		get) args=(/file "$TESTDIR/damaged.out") ;;
		put) args=("$TESTDIR/data.1" /new) ;;
		mkdir | rm) args=(/dir) ;;
		ln) args=(/file /link) ;;
		mv) args=(/file /moved) ;;
		esac
		# shellcheck disable=SC2086
		if expect_exit '!0' "$C" $cmd "$img" "${args[@]}" && grep -q "^chunkfs: .*$(basename "$img")" "$ERR" &&
		   grep -qi -- "$want" "$ERR"; then
			pass "damaged_${kind}_${cmd// /_}"
		else
			fail "damaged_${kind}_${cmd// /_}" "no clear error: $(head -c 300 "$ERR")"
		fi
	done
	[ "$(sum "$img")" = "$before" ] && pass "damaged_${kind}_unchanged" || fail "damaged_${kind}_unchanged" "image was modified"
}
cp "$good" trunc.img && truncate -s 8192 trunc.img
damaged_case truncated trunc.img "chunkfs"
cp "$good" zero4k.img && dd if=/dev/zero of=zero4k.img bs=4096 count=1 conv=notrunc status=none
damaged_case zeroed_sb zero4k.img "magic"
randfile garbage.img 1048576
damaged_case garbage garbage.img "magic"
: >empty.img
damaged_case empty empty.img "chunkfs"
check_err open_missing_image 1 "nosuch.img: No such file or directory" "$C" info nosuch.img
check_err open_directory_image 1 "chunkfs: $TESTDIR" "$C" ls "$TESTDIR"

# A writer killed mid-copy leaves dirty chunks: info still works and shows
# them, writers refuse with a pointer to fsck and leave the image alone.
# A chunk is marked dirty when the first change is written back, not when
# it is made (lazy marking), and file data written to new blocks marks
# nothing: so the copy is of many small files through a small cache, which
# writes changes back as it goes, and the kill comes later at each try
# (the whole copy takes about 0.1 s here).
mkdir dirty.src
for d in 0 1 2 3 4 5 6 7 8 9; do
	mkdir dirty.src/d$d
	for f in $(seq 200); do printf '%01500d' "$f" >dirty.src/d$d/f$f; done
done
dirty=0
# the small cache is a test hook: without it the copy is written back at
# its end only, and the kill leaves no chunk dirty
have_test_hooks || delays=
for delay in ${delays-0.02 0.03 0.06 0.1 0.2 0.5}; do
	rm -f dirty.img
	"$C" mkfs -q -c 8 dirty.img 256M
	(CHUNKFS_CACHE_KB=256 timeout -s KILL "$delay" "$C" put -r dirty.img dirty.src /d) \
		>/dev/null 2>&1
	"$C" info dirty.img 2>/dev/null | grep -qE '^ +[0-9]+  dirty ' && { dirty=1; break; }
done
if [ $dirty = 1 ]; then
	check_exit dirty_info_works 0 "$C" info dirty.img
	if [ $HAVE_PY = 1 ] && expect_exit 0 "$C" info --json dirty.img; then
		[ "$(jget 'd["totals"]["dirty_chunks"] > 0 and any(c["state"] == "dirty" for c in d["chunks"])')" = True ] &&
			pass dirty_info_json || fail dirty_info_json "no dirty chunk in JSON"
	fi
	before=$(sum dirty.img)
	check_err dirty_write_refused 1 "fsck" "$C" mkdir dirty.img /newdir
	no_crash dirty_ls_no_crash "$C" ls -lR dirty.img /
	no_crash dirty_get_no_crash "$C" get -r dirty.img / dirty.out
	[ "$(sum dirty.img)" = "$before" ] && pass dirty_image_unchanged || fail dirty_image_unchanged "image was modified"
elif ! have_test_hooks; then
	skip dirty_info_works "$C has no test hooks (CHUNKFS_CACHE_KB; build/san has them): NOT tested"
else
	skip dirty_info_works "could not kill a writer mid-copy (the copy was too fast)"
fi
rm -rf dirty.src dirty.img

# Hostile: random bytes over metadata past the superblock.  Any ordinary
# outcome is fine; crashes, hangs and sanitizer reports are not.
for seed in 1 2 3 4 5 6; do
	cp "$good" hostile.img
	python3 - "$seed" <<'EOF' 2>/dev/null || dd if=/dev/urandom of=hostile.img bs=512 seek=$((seed * 3)) count=4 conv=notrunc status=none
import random, sys
seed = int(sys.argv[1]); r = random.Random(seed)
f = open("hostile.img", "r+b"); data = bytearray(f.read())
for _ in range(40 * seed):
    i = r.randrange(1024, min(len(data), 1 << 20))
    data[i] = r.randrange(256)
f.seek(0); f.write(data); f.close()
EOF
	no_crash "hostile_${seed}_info" "$C" info --json hostile.img
	no_crash "hostile_${seed}_ls" "$C" ls -laiR hostile.img /
	no_crash "hostile_${seed}_cat" "$C" cat hostile.img /file
	rm -rf hostile.out
	no_crash "hostile_${seed}_get" "$C" get -r hostile.img / hostile.out
	no_crash "hostile_${seed}_put" "$C" put hostile.img data.4097 /dir/new
	no_crash "hostile_${seed}_rm" "$C" rm -r hostile.img /dir
done

finish
