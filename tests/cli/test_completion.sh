#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bash completion (completion/chunkfs): load it in bash, with and without
# the bash-completion package, and check real completions: commands,
# options from --help, mount options after -o, images, mount points and
# paths inside an image.
. "$(dirname "$0")/lib.sh"

COMP=$CHUNKFS_SRC/completion/chunkfs
mkdir -p bin imgs mnt mnt2 host
ln -s "$CHUNKFS" bin/chunkfs
ln -s "$CHUNKFS" bin/mkfs.chunkfs
export PATH=$TESTDIR/bin:$PATH

img=imgs/disk.img
"$CHUNKFS" mkfs -q "$img" 16M && "$CHUNKFS" mkdir -p "$img" /photos/2024 /pub &&
	echo x | "$CHUNKFS" put "$img" - /photos/a.jpg &&
	echo y | "$CHUNKFS" put "$img" - /pi.txt || { fail setup "mkfs/put failed"; finish; }

# complete MODE LINE: the completions of LINE (the cursor at its end), one
# a line, sorted.  MODE "plain" loads only our script; "full" loads the
# bash-completion package first, as an interactive shell does.
complete_line() {
	local mode=$1 line=$2
	MODE=$mode COMP_FILE=$COMP LINE=$line bash --norc --noprofile -c '
		if [ "$MODE" = full ]; then
			. /usr/share/bash-completion/bash_completion || exit 3
		fi
		. "$COMP_FILE" || exit 3
		read -ra COMP_WORDS <<<"$LINE"
		[[ $LINE == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$LINE COMP_POINT=${#LINE}
		fn=$(complete -p "${COMP_WORDS[0]}" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
		[ -n "$fn" ] || exit 4
		"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort
	'
}

# expect NAME MODE LINE WORD... : each WORD among the completions
# expect_only NAME MODE LINE WORD... : exactly those completions
expect() {
	local name=$1 mode=$2 line=$3 got w
	shift 3
	got=$(complete_line "$mode" "$line") || { fail "$name" "bash exited $?"; return; }
	for w in "$@"; do
		if ! grep -qxF -- "$w" <<<"$got"; then
			fail "$name" "'$line' offers no '$w': $(tr '\n' ' ' <<<"$got")"
			return
		fi
	done
	pass "$name"
}
expect_only() {
	local name=$1 mode=$2 line=$3 got want
	shift 3
	got=$(complete_line "$mode" "$line") || { fail "$name" "bash exited $?"; return; }
	want=$(printf '%s\n' "$@" | sort)
	if [ "$got" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "'$line' offers '$(tr '\n' ' ' <<<"$got")', want '$(tr '\n' ' ' <<<"$want")'"
	fi
}

modes=(plain)
if [ -f /usr/share/bash-completion/bash_completion ]; then
	modes+=(full)
else
	skip completion_with_bash_completion "bash-completion not installed"
fi
for m in "${modes[@]}"; do
	expect "commands_$m" "$m" "chunkfs " mkfs info ls fsck mount --help --version
	expect_only "command_prefix_$m" "$m" "chunkfs m" mkfs mkdir mount mv
	expect "mkfs_options_$m" "$m" "chunkfs mkfs -" -b -c -L -N -I -U -F -q
	expect "helper_name_$m" "$m" "mkfs.chunkfs -" -b -c -F
	expect_only "fsck_json_$m" "$m" "chunkfs fsck --j" --json
	expect_only "mount_o_$m" "$m" "chunkfs mount -o ro,clean_" ro,clean_after=
	expect "mount_o_list_$m" "$m" "chunkfs mount -o " ro nocheck noatime max_threads= \
		errors=continue errors=remount-ro errors=repair
	expect_only "mount_o_errors_$m" "$m" "chunkfs mount -o ro,err" \
		ro,errors=continue ro,errors=remount-ro ro,errors=repair
	expect_only "image_file_$m" "$m" "chunkfs info imgs/d" imgs/disk.img
	expect_only "mount_point_$m" "$m" "chunkfs mount -o ro imgs/disk.img mn" mnt mnt2
	expect_only "image_root_$m" "$m" "chunkfs ls imgs/disk.img /p" /photos/ /pi.txt /pub/
	expect_only "image_subdir_$m" "$m" "chunkfs cat imgs/disk.img /photos/" \
		/photos/2024/ /photos/a.jpg
	expect_only "get_src_in_image_$m" "$m" "chunkfs get -r imgs/disk.img /pu" /pub/
	expect_only "get_dest_on_host_$m" "$m" "chunkfs get -r imgs/disk.img /pub ho" host
	expect_only "put_dest_in_image_$m" "$m" "chunkfs put imgs/disk.img host /ph" /photos/
	expect_only "info_svg_file_$m" "$m" "chunkfs info --svg imgs/d" imgs/disk.img
	expect_only "info_after_svg_$m" "$m" "chunkfs info --svg x.svg imgs/d" imgs/disk.img
	expect_only "tune_options_$m" "$m" "chunkfs tune -" -L -O -U -l -o
	expect "tune_mount_opts_$m" "$m" "chunkfs tune -o no" noatime nocheck
	expect_only "tune_uuid_$m" "$m" "chunkfs tune -U r" random
	expect_only "trim_options_$m" "$m" "chunkfs trim -" -m -v
	expect_only "trim_image_$m" "$m" "chunkfs trim -v imgs/d" imgs/disk.img
	expect_only "probe_options_$m" "$m" "chunkfs probe -" --export
	expect_only "probe_device_$m" "$m" "chunkfs probe --export imgs/d" imgs/disk.img
	expect_only "mkfs_blocksize_$m" "$m" "chunkfs mkfs -b 6" 64K
done
finish
