#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The fsck corruption library, in the spirit of e2fsprogs' tests/f_*.
# test-timeout: 3000  (62 cases, 4-6 fsck runs each: 90 s idle at 48 cases; 1,100 s seen at 60 cases in a fresh-clone .ci/run with nine hung FUSE daemons on the machine)
#
# Each directory tests/fsck/CASE/ is one case: a populated image (4 chunks,
# 64 for the c64-* cases, 4 with every chunk full of inodes and blocks but
# for the repair reserve for the full-* cases (fixed inode tables), 2 with
# inode clusters for the icl-* cases) given ONE damage by tests/fsck/mkcase.c
# (`mkcase damage CASE`; the chunks it changed are marked dirty, as a crash
# would leave them, except for clean-* cases).  For each case:
#   expect.p  `chunkfs fsck -p` (the boot-time check: dirty chunks only)
#             output and exit code: 1 when safe fixes suffice, 4 when a
#             person is needed.  Exit 0 or 1 must leave nothing for a forced
#             read-only check; exit 4 is followed by `fsck -y` then that.
#   expect.fp (clean-* cases only) `chunkfs fsck -p -f`: the damage the
#             dirty-only check skipped is found when every chunk is checked
# Problem lines end with the problem's code and outcome, e.g.
#   chunk 1: inode [/d1/f]: link count 1, should be 2 [LINK_COUNT]; correct it: fixed
#   expect.1  `chunkfs fsck -y -f` output and exit code (also run with -j 1
#             on another copy: the same problems must be found and fixed
#             whatever the number of threads)
#   expect.2  a second run, `chunkfs fsck -n -f`: nothing found, exit 0
#   expect.ls (cases with a file `ls-damaged` naming a directory only)
#             `chunkfs ls -l` of that directory in the damaged image, with
#             its stderr and exit code: what a reader sees before any check
#   expect.3  `mkcase verify`: a normal open succeeds (every chunk clean),
#             the whole tree is listed and read, and each file's contents
#             are compared with what it was written with: "intact" or
#             CHANGED (only what the damage destroyed may change).  A case
#             without expect.3 must verify exactly as its undamaged base
#             image does: the base tree, intact.
# then `chunkfs ls -R` and `chunkfs cat` of every file must work, and the
# image must still be writable: a directory and a file are made in every
# top-level directory (not in the full-* cases: there is no room), then
# everything is deleted with `chunkfs rm -r`,
# after which a forced check finds nothing and exactly the root's and
# lost+found's blocks and inodes are left in use (no leak).
#
# fsck output is compared after removing the image name and the time taken,
# writing inode numbers as the names they had in the intact image ("inode
# [/d1/multi]", "stub [stub:/d1/link-f]", "continuation [cont:/d3/big:1]",
# from `mkcase names`) and sorting the problem lines (chunks are checked on
# several threads, so their order varies).
# A case directory holding a file `known-bug` instead of expect files is a
# damage fsck handles wrongly today: it is reported as SKIP with the first
# line of that file (see the file for the reproduction); a file
# `known-bug.p` does the same for the -p part of a case only.
#
# FSCK_UPDATE=1 bash tests/fsck/run.sh rewrites the expect files from the
# current output (then review them with git diff: an expect file records
# what fsck SHOULD say).  FSCK_CASES="a b" runs only those cases.
#
# Needs a C compiler: mkcase is built against the library next to
# $CHUNKFS (build/san/libchunkfs.a in make check) and its internal headers.

. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

HERE=$CHUNKFS_SRC/tests/fsck
BUILD=$(cd "$(dirname "$CHUNKFS")" && pwd)
LIB=$(internal_lib "$BUILD")
UPDATE=${FSCK_UPDATE:-0}
MK=$TESTDIR/mkcase

# The images live on tmpfs when there is one (fsck flushes the image to
# stable storage, which costs seconds per case on a disk); removed at the
# end unless something failed.
WORK=$TESTDIR/work
if [ -d /dev/shm ] && [ -w /dev/shm ] && W=$(mktemp -d /dev/shm/chunkfs-fsck.XXXXXX); then
	WORK=$W
	trap 'if grep -q "^F$" "$_t_results" 2>/dev/null; then
		echo "images of failed cases kept in $WORK"; else rm -rf "$WORK"; fi' EXIT
fi

# ---- build the generator and the base images ----------------------------------
build_mkcase() {
	local cc=${CC:-cc} san=()

	if [ ! -f "$LIB" ]; then
		echo "no $LIB" >&2
		return 1
	fi
	# a sanitized library needs the sanitizer runtimes at link time
	if nm "$LIB" 2>/dev/null | grep -q '__asan_'; then
		san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
	fi
	"$cc" -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -pthread "${san[@]}" \
		-I"$CHUNKFS_SRC/include" -I"$CHUNKFS_SRC/src" \
		"$HERE/mkcase.c" "$LIB" -o "$MK" -lm
}

if ! build_mkcase 2>"$TESTDIR/.lib/cc.err"; then
	fail mkcase "cannot build tests/fsck/mkcase.c: $(head -c 600 "$TESTDIR/.lib/cc.err")"
	finish
fi

mkdir -p "$WORK/base"
if ! "$MK" build "$WORK/base/b4.img" >"$WORK/base/b4.log" 2>&1 ||
   ! "$MK" build64 "$WORK/base/b64.img" >"$WORK/base/b64.log" 2>&1 ||
   ! "$MK" buildfull "$WORK/base/bfull.img" >"$WORK/base/bfull.log" 2>&1 ||
   ! "$MK" buildcl "$WORK/base/bcl.img" >"$WORK/base/bcl.log" 2>&1; then
	fail mkcase_build "$(cat "$WORK"/base/*.log | head -c 600)"
	finish
fi
# inode numbers -> names, for readable and allocation-independent output
if ! "$MK" names "$WORK/base/b4.img" >"$WORK/base/b4.img.names" 2>"$WORK/base/names.err" ||
   ! "$MK" names "$WORK/base/b64.img" >"$WORK/base/b64.img.names" 2>>"$WORK/base/names.err" ||
   ! "$MK" names "$WORK/base/bfull.img" >"$WORK/base/bfull.img.names" 2>>"$WORK/base/names.err" ||
   ! "$MK" names "$WORK/base/bcl.img" >"$WORK/base/bcl.img.names" 2>>"$WORK/base/names.err"; then
	fail mkcase_build "mkcase names: $(head -c 600 "$WORK/base/names.err")"
	finish
fi
# what a case without expect.3 must verify as: its base image, undamaged
for b in b4 b64 bfull bcl; do
	cp "$WORK/base/$b.img" "$WORK/base/v.img" && cp "$WORK/base/$b.img.manifest" "$WORK/base/v.img.manifest" &&
		timeout 120 "$MK" verify "$WORK/base/v.img" >"$WORK/base/$b.verify" 2>&1
	rc=$?
	"$MK" symbolize "$WORK/base/$b.img.names" <"$WORK/base/$b.verify" >"$WORK/base/$b.img.expect3"
	echo "exit $rc" >>"$WORK/base/$b.img.expect3"
	if [ "$rc" != 0 ] || grep -q CHANGED "$WORK/base/$b.img.expect3"; then
		fail mkcase_build "mkcase verify of the undamaged $b image: $(head -c 600 "$WORK/base/$b.verify")"
		finish
	fi
done
pass mkcase_build
NAMES=/dev/null

# ---- helpers --------------------------------------------------------------------

# fsck_run OUTFILE ARGS...: run chunkfs fsck ARGS test.img in the current
# directory; OUTFILE gets the normalised output and a last line "exit N".
# Returns non-zero (and says why) on a crash, timeout or sanitizer report.
fsck_run() {
	local out=$1 rc n
	shift
	timeout -k 5 120 "$CHUNKFS" fsck "$@" test.img >fsck.out 2>fsck.err
	rc=$?
	sed -e 's/^test\.img: //' -e 's/ in [0-9][0-9.]*s$//' fsck.out |
		"$MK" symbolize "$NAMES" >fsck.norm
	n=$(grep -n -m1 '^checked ' fsck.norm | cut -d: -f1)
	{
		if [ -n "$n" ]; then
			head -n $((n - 1)) fsck.norm | LC_ALL=C sort
			tail -n +"$n" fsck.norm
		else
			LC_ALL=C sort fsck.norm
		fi
		sed 's/^/stderr: /' fsck.err
		echo "exit $rc"
	} >"$out"
	if [ "$rc" -gt 125 ] || grep -Eq "$_t_san_re" fsck.err; then
		echo "fsck $* crashed (exit $rc): $(tail -n 5 fsck.err)"
		return 1
	fi
	return 0
}

# compare NAME EXPECTED GOT: pass/fail (or record EXPECTED in update mode)
compare() {
	local name=$1 want=$2 got=$3
	if [ "$UPDATE" = 1 ]; then
		cp "$got" "$want"
		pass "$name (recorded)"
	elif [ ! -f "$want" ]; then
		fail "$name" "no $(basename "$want") (FSCK_UPDATE=1 records one)"
	elif diff -u "$want" "$got" >diff.out; then
		pass "$name"
	else
		fail "$name" "output differs from ${want#"$CHUNKFS_SRC"/}:
$(head -n 40 diff.out)"
	fi
}

# A file's last line "exit N": N.
exit_of() {
	sed -n 's/^exit \([0-9]*\)$/\1/p' "$1" | tail -n 1
}

# New files in every top-level directory (the inodes and blocks allocated
# next in each chunk), then everything deleted: then only the root and
# lost+found may hold inodes and blocks, and a forced check must find nothing.
check_writable() {
	local name=$1 e why=""
	if ! timeout 60 "$CHUNKFS" ls test.img / >root.ls 2>ls.err ||
	   ! timeout 60 "$CHUNKFS" ls -l test.img / >root.lsl 2>>ls.err; then
		fail "$name" "ls / failed: $(head -c 300 ls.err)"
		return
	fi
	head -c 5000 /dev/zero | tr '\0' x >new.data
	while read -r mode _ _ _ _ _ _ e; do
		[ "${mode:0:1}" = d ] || continue
		[[ $name == */full-* ]] && continue   # no room, by design
		timeout 60 "$CHUNKFS" mkdir test.img "/$e/new-dir" 2>>rm.err &&
		timeout 60 "$CHUNKFS" put test.img new.data "/$e/new-dir/new-file" 2>>rm.err ||
			why="$why creating /$e/new-dir/new-file failed;"
	done <root.lsl
	while IFS= read -r e; do
		[ "$e" = lost+found ] && continue
		timeout 60 "$CHUNKFS" rm -r test.img "/$e" 2>>rm.err ||
			why="$why rm -r /$e failed;"
	done <root.ls
	timeout 60 "$CHUNKFS" ls test.img /lost+found >lpf.ls 2>>rm.err
	while IFS= read -r e; do
		timeout 60 "$CHUNKFS" rm -r test.img "/lost+found/$e" 2>>rm.err ||
			why="$why rm -r /lost+found/$e failed;"
	done <lpf.ls
	if ! fsck_run after-rm.out -n -f >/dev/null || [ "$(exit_of after-rm.out)" != 0 ]; then
		why="$why fsck -n -f after deleting everything: $(grep -v '^exit' after-rm.out | head -n 5 | tr '\n' ' ')"
	fi
	timeout 60 "$CHUNKFS" info test.img >info.out 2>&1
	if ! grep -Eq '^Inodes: +2 used' info.out || ! grep -Eq '^Data blocks: +2 used' info.out; then
		why="$why after deleting everything: $(grep -E '^(Inodes|Data blocks):' info.out | tr -s ' ' | tr '\n' ';')"
	fi
	if [ -n "$why" ]; then
		fail "$name" "$why $(head -c 300 rm.err)"
	else
		pass "$name"
	fi
}

# --json of `fsck -n -f` on the damaged image: one problem_list entry per
# problem line (its "messages"), with the code that line names, and -n's
# outcomes.
check_json() {
	local name=$1 rc why
	command -v python3 >/dev/null || { skip "$name" "python3 not installed"; return; }
	timeout -k 5 120 "$CHUNKFS" fsck -n -f --json test.img >json.out 2>json.err
	rc=$?
	why=$(python3 - json.out "$rc" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
lines = [l for l in d["messages"] if re.search(r' \[[A-Z_]+\]; ', l)]
codes = sorted(re.search(r' \[([A-Z_]+)\]; ', l).group(1) for l in lines)
got = sorted(p["code"] for p in d["problem_list"])
if got != codes:
    print("codes", got, "but the text names", codes)
elif len(got) != d["problems"]:
    print(len(got), "entries for", d["problems"], "problems")
elif len(lines) != len(d["messages"]):
    print("messages without a code:", [l for l in d["messages"] if l not in lines])
elif d["exit"] != int(sys.argv[2]):
    print("exit", d["exit"], "in the JSON,", sys.argv[2], "returned")
else:
    for p in d["problem_list"]:
        if p["outcome"] not in ("not fixed: -n", "needs a person") or not p["invariant"]:
            print("entry", p)
            break
PY
)
	if [ $? = 0 ] && [ -z "$why" ]; then
		pass "$name"
	else
		fail "$name" "$why $(head -c 300 json.err)"
	fi
}

# ---- one case -----------------------------------------------------------------------

run_case() {
	local c=$1 dir=$HERE/$1 base=$WORK/base/b4.img w=$WORK/case/$1 pe why rc
	case $c in c64-*) base=$WORK/base/b64.img ;; full-*) base=$WORK/base/bfull.img ;;
		icl-*) base=$WORK/base/bcl.img ;; esac
	NAMES=$base.names
	if [ -f "$dir/known-bug" ]; then
		skip "fsck/$c" "known fsck bug: $(head -n 1 "$dir/known-bug")"
		return
	fi
	mkdir -p "$w/p" "$w/y" "$w/j1"
	cd "$w" || return
	cp "$base" test.img && cp "$base.manifest" test.img.manifest || return
	if ! "$MK" damage "$c" test.img >damage.log 2>&1; then
		fail "fsck/$c/damage" "$(head -c 400 damage.log)"
		cd "$TESTDIR" || exit 1
		return
	fi
	for d in p y j1; do cp test.img test.img.manifest "$d/"; done
	check_json "fsck/$c/json"
	if [ -f "$dir/ls-damaged" ]; then
		mkdir -p "$w/ls" && cp test.img "$w/ls/" && cd "$w/ls" || return
		{
			timeout 60 "$CHUNKFS" ls -l test.img "$(cat "$dir/ls-damaged")" 2>ls.err |
				sed 's/ [0-9-]* [0-9][0-9]:[0-9][0-9] / DATE /'
			echo "exit ${PIPESTATUS[0]}"
			sed 's/^/stderr: /' ls.err
		} >ls.out
		compare "fsck/$c/ls-damaged" "$dir/expect.ls" ls.out
		cd "$w" || return
	fi

	# -p: what a boot-time check does with the dirty chunks
	cd "$w/p" || return
	if [ -f "$dir/known-bug.p" ]; then
		skip "fsck/$c/preen" "known fsck bug: $(head -n 1 "$dir/known-bug.p")"
	elif ! why=$(fsck_run p.out -p); then
		fail "fsck/$c/preen" "$why"
	else
		compare "fsck/$c/preen" "$dir/expect.p" p.out
		pe=$(exit_of p.out)
		if [ "$pe" = 4 ]; then
			# a person runs fsck -y next
			fsck_run p-y.out -y >/dev/null
		fi
		# exit 0 or 1 claims the image is consistent now (the clean-*
		# cases' damage sits in a chunk -p rightly skips)
		if [ "$pe" = 1 ] || [ "$pe" = 4 ] || { [ "$pe" = 0 ] && [[ $c != clean-* ]]; }; then
			if fsck_run p-n.out -n -f >/dev/null && [ "$(exit_of p-n.out)" = 0 ]; then
				pass "fsck/$c/preen-then-clean"
			else
				fail "fsck/$c/preen-then-clean" \
				     "after fsck -p (exit $pe)$([ "$pe" = 4 ] && echo " and -y"), fsck -n -f still finds: $(head -n 8 p-n.out | tr '\n' '|')"
			fi
		fi
	fi

	# damage in a chunk marked clean: skipped above, found when forced
	if [[ $c == clean-* ]]; then
		cd "$w" && mkdir -p fp && cp test.img test.img.manifest fp/ && cd fp || return
		if ! why=$(fsck_run fp.out -p -f); then
			fail "fsck/$c/preen-forced" "$why"
		else
			compare "fsck/$c/preen-forced" "$dir/expect.fp" fp.out
		fi
	fi

	# -y -f, then a second forced read-only run
	cd "$w/y" || return
	if ! why=$(fsck_run 1.out -y -f); then
		fail "fsck/$c/repair" "$why"
	else
		compare "fsck/$c/repair" "$dir/expect.1" 1.out
	fi
	fsck_run 2.out -n -f >/dev/null
	compare "fsck/$c/second" "$dir/expect.2" 2.out
	if [ "$(exit_of 2.out)" != 0 ] && [ "$UPDATE" = 1 ]; then
		fail "fsck/$c/second" "the second run found problems (see $w/y/2.out)"
	fi

	# the same repair on one thread finds and fixes the same problems
	cd "$w/j1" || return
	fsck_run 1.out -y -f -j 1 >/dev/null
	if diff -u "$w/y/1.out" 1.out >diff.out; then
		pass "fsck/$c/one-thread"
	else
		fail "fsck/$c/one-thread" "fsck -y -f -j 1 differs from the default threads:
$(head -n 30 diff.out)"
	fi

	# the repaired image: opens normally, every file read and compared
	cd "$w/y" || return
	timeout 120 "$MK" verify test.img >verify.out 2>&1
	rc=$?
	"$MK" symbolize "$NAMES" <verify.out >3.out
	echo "exit $rc" >>3.out
	if [ "$UPDATE" = 1 ] && cmp -s 3.out "$base.expect3"; then
		rm -f "$dir/expect.3"
		pass "fsck/$c/verify (the base tree, intact)"
	elif [ -f "$dir/expect.3" ] || [ "$UPDATE" = 1 ]; then
		compare "fsck/$c/verify" "$dir/expect.3" 3.out
	else
		compare "fsck/$c/verify" "$base.expect3" 3.out
	fi

	# the command line tools over it
	why=""
	timeout 60 "$CHUNKFS" ls -R test.img / >ls.out 2>ls.err || why="ls -R failed: $(head -c 300 ls.err)"
	while IFS= read -r line; do
		p=${line%%: intact*}
		p=${p%%: CHANGED*}
		timeout 60 "$CHUNKFS" cat test.img "$p" >/dev/null 2>cat.err ||
			why="$why cat $p failed: $(head -c 200 cat.err);"
	done < <(grep -E ': (intact|CHANGED) \(' verify.out)
	if [ -z "$why" ]; then
		pass "fsck/$c/ls-cat"
	else
		fail "fsck/$c/ls-cat" "$why"
	fi
	check_writable "fsck/$c/writable"
	cd "$TESTDIR" || exit 1
}

cases=()
for d in "$HERE"/*/; do
	c=$(basename "$d")
	[ -f "$d/expect.1" ] || [ -f "$d/known-bug" ] || [ "$UPDATE" = 1 ] || continue
	if [ -n "${FSCK_CASES:-}" ] && [[ " $FSCK_CASES " != *" $c "* ]]; then
		continue
	fi
	cases+=("$c")
done
if [ ${#cases[@]} -eq 0 ]; then
	fail cases "no case directories with expect files in $HERE"
fi
for c in "${cases[@]}"; do
	run_case "$c"
done
finish
