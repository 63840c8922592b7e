#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Turn on the kernel's FUSE over io_uring (the fuse module's enable_uring
# parameter), saying so, for `make run`, `make bench` and CI, which run as
# root and test or show both transports.  chunkfs itself never changes a
# kernel parameter.  Quiet and harmless where the kernel has no such
# parameter, or it is on, or we are not root.
p=/sys/module/fuse/parameters/enable_uring
[ -w "$p" ] || exit 0
case $(cat "$p" 2>/dev/null) in
Y | y | 1) exit 0 ;;
esac
if echo Y >"$p" 2>/dev/null; then
	echo "uring-on.sh: turned on FUSE over io_uring in the kernel (echo Y > $p)"
fi
exit 0
