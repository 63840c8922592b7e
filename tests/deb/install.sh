#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-timeout: 600
# The Debian packages (make deb): build them (or take DEB_DIR's), check
# lintian's verdict, install them on this machine, use what they installed
# (the command, mkfs -t / fsck -t / mount -t chunkfs and an fstab line, the
# manual pages, the completion, the library through pkg-config), and remove
# them again, leaving nothing behind.
#
# Needs root and dpkg; the mount part needs /dev/fuse and unshare.  Run by
# make check (tests/run.sh runs tests/deb/ alone, after every other test,
# since installing the packages changes /usr/sbin for the moment the test
# runs; building them takes 45-90 s) and by `make deb-check` on packages
# made by `make deb`.  By hand:  bash tests/deb/install.sh
. "$(dirname "$0")/../cli/lib.sh"

pkgs=(chunkfs libchunkfs0 libchunkfs-dev)
why=
if [ "$(id -u)" != 0 ]; then
	why="not root"
elif ! command -v dpkg >/dev/null || ! command -v dpkg-buildpackage >/dev/null; then
	why="dpkg or dpkg-buildpackage missing (make deb installs them)"
else
	for p in "${pkgs[@]}"; do
		if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ]; then
			why="package $p is already installed here: not touching it"
		fi
	done
fi
if [ -n "$why" ]; then
	echo "***** DEBIAN PACKAGE TEST NOT RUN: $why *****" >&2
	skip deb_install "$why: the package was NOT tested"
	finish
fi

INSTALLED=0
MNT=$(mktemp -d /tmp/chunkfs-deb.XXXXXX)
cleanup() {
	umount -l "$MNT" 2>/dev/null
	if [ "$INSTALLED" = 1 ]; then
		dpkg --purge "${pkgs[@]}" >/dev/null 2>&1
	fi
	rmdir "$MNT" 2>/dev/null
}
trap cleanup EXIT

# ---- build ------------------------------------------------------------------
if [ -z "${DEB_DIR:-}" ]; then
	DEB_DIR=$TESTDIR/b/deb
	start=$(date +%s)
	if ! make -s -C "$CHUNKFS_SRC" B="$TESTDIR/b" deb >build.log 2>&1; then
		fail deb_build "$(tail -20 build.log)"
		finish
	fi
	echo "  make deb took $(($(date +%s) - start)) s"
fi
debs=()
for p in "${pkgs[@]}"; do
	f=$(ls "$DEB_DIR/${p}"_*.deb 2>/dev/null | head -1)
	[ -n "$f" ] && debs+=("$f")
done
if [ "${#debs[@]}" = 3 ]; then
	pass deb_build
else
	fail deb_build "packages missing in $DEB_DIR: $(ls "$DEB_DIR")"
	finish
fi
# lintian: no error and no warning (explained overrides in debian/ aside)
if [ -f "$DEB_DIR/lintian.txt" ] && ! grep -Eq '^[EW]: ' "$DEB_DIR/lintian.txt"; then
	pass deb_lintian_clean
else
	fail deb_lintian_clean "$(grep -E '^[EW]: ' "$DEB_DIR/lintian.txt" 2>/dev/null | head -10)"
fi

# ---- install ----------------------------------------------------------------
if expect_exit 0 dpkg -i "${debs[@]}"; then
	INSTALLED=1
	pass deb_install
else
	fail deb_install "$(tail -5 "$ERR")"
	finish
fi
ver=$(sed -n 's/^#define CFS_VERSION_STRING "\(.*\)".*/\1/p' "$CHUNKFS_SRC/include/chunkfs.h")
# the first line names the version; the second the libfuse linked
[ "$(/usr/bin/chunkfs --version | head -n 1)" = "chunkfs $ver" ] &&
	/usr/bin/chunkfs --version | grep -q '^libfuse [0-9]' && pass deb_command ||
	fail deb_command "$(/usr/bin/chunkfs --version 2>&1)"
ok=1
for m in chunkfs.5 chunkfs.8 mkfs.chunkfs.8 fsck.chunkfs.8 mount.chunkfs.8 mount.fuse.chunkfs.8 \
	chunkfs-scrub.8; do
	[ -f "/usr/share/man/man${m##*.}/$m.gz" ] || ok=0
done
MANWIDTH=80 man 8 mount.chunkfs 2>/dev/null | grep -q 'clean_after=secs' || ok=0
[ $ok = 1 ] && pass deb_man_pages || fail deb_man_pages "a page is missing or man cannot show it"
[ -f /usr/share/bash-completion/completions/chunkfs ] &&
	[ -L /usr/share/bash-completion/completions/mkfs.chunkfs ] &&
	pass deb_completion || fail deb_completion "not installed"

ok=1
for u in chunkfs-scrub@.service chunkfs-scrub_all.service chunkfs-scrub_all.timer; do
	[ -f "/usr/lib/systemd/system/$u" ] || ok=0
done
if [ $ok = 1 ] && command -v systemd-analyze >/dev/null; then
	systemd-analyze verify /usr/lib/systemd/system/chunkfs-scrub_all.timer \
		/usr/lib/systemd/system/chunkfs-scrub_all.service >"$TESTDIR/units.err" 2>&1 ||
		{ ok=0; echo "  $(head -c 300 "$TESTDIR/units.err")" >&2; }
fi
[ $ok = 1 ] && pass deb_systemd_units || fail deb_systemd_units "a unit is missing or wrong"

# the udev rule names the installed chunkfs, which probes an image
rule=/usr/lib/udev/rules.d/64-chunkfs.rules
if [ -f "$rule" ] && ! grep -q '@' "$rule" &&
   grep -qx 'IMPORT{program}="/usr/bin/chunkfs probe --export $devnode"' "$rule" &&
   /usr/bin/chunkfs mkfs -q -L probed -U 0badc0de-1234-4abc-8def-0123456789ab probe.img 8M &&
   /usr/bin/chunkfs probe --export probe.img | grep -qx ID_FS_UUID=0badc0de-1234-4abc-8def-0123456789ab &&
   /usr/bin/chunkfs probe --export probe.img | grep -qx ID_FS_LABEL_ENC=probed; then
	pass deb_udev_rule_and_probe
else
	fail deb_udev_rule_and_probe "$(ls -l "$rule" 2>&1; grep IMPORT "$rule" 2>&1)"
fi

# the library, through pkg-config, shared
cat >prog.c <<'EOC'
#include <chunkfs.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct cfs_mkfs_opts o = { .size = 8u << 20, .label = "from-lib" };
	struct cfs_fs *fs;
	struct cfs_info in;

	if (argc != 2 || cfs_mkfs(argv[1], &o) < 0 || cfs_open(argv[1], 0, &fs) < 0 ||
	    cfs_get_info(fs, &in) < 0)
		return 1;
	printf("%s %s\n", CFS_VERSION_STRING, in.label);
	return cfs_close(fs) < 0;
}
EOC
if expect_exit 0 sh -c 'cc -o prog prog.c $(pkg-config --cflags --libs chunkfs) && ldd prog' &&
   grep -Eq 'libchunkfs.so.0 => /(usr/)?lib/' "$OUT" &&
   [ "$(./prog lib.img)" = "$ver from-lib" ] && /usr/bin/chunkfs fsck -f -n lib.img >/dev/null; then
	pass deb_library
else
	fail deb_library "$(cat "$OUT" "$ERR" | tail -5)"
fi

# mkfs(8) and fsck(8) find the helpers in /sbin
img=$TESTDIR/disk.img
truncate -s 32M "$img"
if expect_exit 0 mkfs -t chunkfs -L viamkfs "$img" && expect_exit 0 fsck -t chunkfs -f -n "$img" &&
   /usr/bin/chunkfs info "$img" | grep -q 'label: *viamkfs'; then
	pass deb_mkfs_fsck_t_chunkfs
else
	fail deb_mkfs_fsck_t_chunkfs "$(cat "$ERR")"
fi

# mount(8) -t chunkfs and an fstab line, in a private mount namespace
if [ ! -c /dev/fuse ] || ! command -v unshare >/dev/null; then
	echo "***** the mount through mount(8) was NOT tested: no /dev/fuse or unshare *****" >&2
	skip deb_mount_t_chunkfs "no /dev/fuse or unshare"
else
	echo "$img $MNT chunkfs defaults,noatime,nofail 0 0" >fstab
	timeout -k 5 90 unshare -m --propagation private bash -c '
		set -e
		trap "umount -l $1 2>/dev/null || true" EXIT
		wait_unlocked() { for i in $(seq 100); do flock -n -x "$1" true && return; sleep 0.1; done; return 1; }
		mount -t chunkfs "$2" "$1"
		grep -q " $1 fuse.chunkfs " /proc/self/mounts
		echo viamount >"$1/viamount"
		umount "$1"
		wait_unlocked "$2"
		mount -T "$3" "$1"
		grep -q " $1 fuse.chunkfs .*noatime" /proc/self/mounts
		echo viafstab >"$1/viafstab"
		umount "$1"
		wait_unlocked "$2"
	' _ "$MNT" "$img" "$TESTDIR/fstab" >mount.log 2>&1
	rc=$?
	if [ "$rc" = 0 ] && [ "$(/usr/bin/chunkfs cat "$img" /viamount)" = viamount ] &&
	   [ "$(/usr/bin/chunkfs cat "$img" /viafstab)" = viafstab ]; then
		pass deb_mount_t_chunkfs_and_fstab
	else
		fail deb_mount_t_chunkfs_and_fstab "exit $rc: $(tail -5 mount.log)"
	fi
fi

# ---- remove -----------------------------------------------------------------
if expect_exit 0 dpkg --purge "${pkgs[@]}"; then
	INSTALLED=0
	left=
	for f in /usr/bin/chunkfs /usr/sbin/mkfs.chunkfs /usr/sbin/fsck.chunkfs \
		/usr/sbin/mount.chunkfs /usr/sbin/mount.fuse.chunkfs /usr/include/chunkfs.h \
		/usr/share/man/man8/chunkfs.8.gz /usr/share/bash-completion/completions/chunkfs \
		/usr/lib/udev/rules.d/64-chunkfs.rules; do
		[ -e "$f" ] || [ -L "$f" ] && left="$left $f"
	done
	ls /usr/lib/*/libchunkfs* >/dev/null 2>&1 && left="$left libchunkfs"
	[ -z "$left" ] && pass deb_remove || fail deb_remove "left behind:$left"
else
	fail deb_remove "$(tail -5 "$ERR")"
fi
finish
