# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs build (GNU make).
#
#   make / make all   build/libchunkfs.a, build/libchunkfs.so, build/chunkfs
#   make tests        also every tests/unit/test_*.c as build/tests/test_*
#                     (unsanitized, for valgrind or gdb; with the test hooks)
#   make check        sanitizer build in build/san/, then tests/run.sh build/san
#   make run          install missing packages, build, try it on chunkfs.img
#   make fuzz         libFuzzer over image open + fsck (FUZZ_SECONDS, default 300)
#   make crash-long   test_crash, test_fsck_random, tests/mount/kill_stress.sh
#                     (kill -9 of the mount daemon), inject.sh and
#                     scrub_soak.sh (online repair held to the offline one)
#                     with many more rounds
#   make fill-long    test_fill over the whole matrix: 1, 4 and 16 GiB image
#                     files in $TMPDIR (up to 16 GiB of disk at a time)
#   make install      PREFIX (default /usr/local) and DESTDIR are honoured
#   make uninstall, make clean
#
# Sources are found by wildcard (src/*.c and src/fsck/*.c are the library, tools/*.c and
# daemon/*.c (the FUSE daemon) the
# chunkfs command, tests/unit/test_*.c one test binary each), so new files
# need no change here.  Header dependencies are tracked with -MMD -MP.
# The library needs only libc and pthreads; the command also links libfuse3
# (for chunkfs mount), libblkid (mkfs) and libm.

PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     := $(PREFIX)/bin
SBINDIR    := $(PREFIX)/sbin
LIBDIR     := $(PREFIX)/lib
INCLUDEDIR := $(PREFIX)/include
PKGCONFIGDIR := $(LIBDIR)/pkgconfig

INSTALL ?= install
OBJCOPY ?= objcopy

# Library version comes from the public header; the soname tracks the major.
VERSION := $(shell sed -n 's/^\#define CFS_VERSION_STRING "\(.*\)".*/\1/p' include/chunkfs.h)
ifeq ($(VERSION),)
VERSION := 0.0.0
endif
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))
SONAME   := libchunkfs.so.$(SOMAJOR)
SOREAL   := libchunkfs.so.$(VERSION)

B   := build
SAN := $(B)/san

# Flags every object gets; CFLAGS (optimisation, debug) may be overridden.
# Warnings are errors in the developers' builds (make check, .ci/run, or
# WERROR=1), not in a distribution's: a new compiler's new warning must not
# break a user's package build.
WERROR ?= 0
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
	-pthread -Iinclude -Isrc
CFLAGS      ?= -O2 -g
SAN_CFLAGS  ?= -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	       -fno-sanitize-recover=undefined
DEPFLAGS    := -MMD -MP
# Library objects export only what include/chunkfs.h declares (it sets
# default visibility around its declarations); everything else, cfs_
# prefix or not, stays inside libchunkfs.so.  The command and the tests
# link the static archive, where hidden symbols still link.
LIB_VISFLAGS := -fvisibility=hidden
LDFLAGS     ?=
LDLIBS      ?=
TEST_CPPFLAGS := -Itests

LIB_SRCS  := $(sort $(wildcard src/*.c src/fsck/*.c))
TOOL_SRCS := $(sort $(wildcard tools/*.c daemon/*.c))
TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))
TEST_NAMES := $(basename $(notdir $(TEST_SRCS)))

LIB_OBJS      := $(LIB_SRCS:%.c=$(B)/obj/%.o)
LIB_PIC_OBJS  := $(LIB_SRCS:%.c=$(B)/pic/%.o)
TOOL_OBJS     := $(TOOL_SRCS:%.c=$(B)/obj/%.o)
TEST_OBJS     := $(TEST_SRCS:%.c=$(B)/obj/%.o)
SAN_LIB_OBJS  := $(LIB_SRCS:%.c=$(SAN)/obj/%.o)
SAN_TOOL_OBJS := $(TOOL_SRCS:%.c=$(SAN)/obj/%.o)
SAN_TEST_OBJS := $(TEST_SRCS:%.c=$(SAN)/obj/%.o)
HOOK_LIB_OBJS := $(LIB_SRCS:%.c=$(B)/hobj/%.o)

# The installed archive has one object whose only global symbols are the
# API (as the .so); the command and the tests link every object, internal
# names and all, from libchunkfs-internal.a, which is never installed.
STATIC_LIB := $(B)/libchunkfs.a
INTERNAL_LIB := $(B)/libchunkfs-internal.a
SHARED_LIB := $(B)/$(SOREAL)
SAN_LIB    := $(SAN)/libchunkfs.a
# The test hooks (environment variables the tests steer the library and
# the daemon with: CHUNKFS_CACHE_KB, CHUNKFS_TEST_*) exist only where
# CFS_TEST_HOOKS is defined: in build/san (make check), and in this
# archive, which the unit tests of `make tests` link.  build/chunkfs and
# the installed libraries read no environment (tests/lib/hooks.sh).
HOOK_LIB   := $(B)/libchunkfs-hooks.a
TESTS      := $(TEST_NAMES:%=$(B)/tests/%)
SAN_TESTS  := $(TEST_NAMES:%=$(SAN)/tests/%)

# The command exists only once tools/*.c does (the tree is being written).
ifneq ($(TOOL_SRCS),)
PROG     := $(B)/chunkfs
SAN_PROG := $(SAN)/chunkfs
endif

ALL_DEPS := $(patsubst %.o,%.d,$(LIB_OBJS) $(LIB_PIC_OBJS) $(TOOL_OBJS) $(TEST_OBJS) \
	$(SAN_LIB_OBJS) $(SAN_TOOL_OBJS) $(SAN_TEST_OBJS) $(HOOK_LIB_OBJS))

.PHONY: all tests check run install uninstall clean
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

all: $(STATIC_LIB) $(INTERNAL_LIB) $(B)/libchunkfs.so $(PROG) hooks
ifeq ($(TOOL_SRCS),)
	@echo "note: no tools/*.c yet, so build/chunkfs was not built"
endif

tests: all $(TESTS)

# The commit-msg hook (scripts/commit-msg) in a git clone: subjects of at
# most 72 characters.
.PHONY: hooks
hooks:
	@sh scripts/install-hooks.sh

# ---- compile rules --------------------------------------------------------
$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(EXTRA_CPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(EXTRA_CPPFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC $(DEPFLAGS) -c $< -o $@

# The sanitizer build also asserts the lock rules (src/lockcheck.h), and
# has the test hooks (HOOK_LIB above).
$(SAN)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -DCFS_LOCK_CHECKS -DCFS_TEST_HOOKS $(EXTRA_CPPFLAGS) $(CPPFLAGS) $(SAN_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/hobj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -DCFS_TEST_HOOKS $(EXTRA_CPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(TEST_OBJS) $(SAN_TEST_OBJS): EXTRA_CPPFLAGS := $(TEST_CPPFLAGS)
$(LIB_OBJS) $(LIB_PIC_OBJS) $(SAN_LIB_OBJS) $(HOOK_LIB_OBJS): EXTRA_CPPFLAGS := $(LIB_VISFLAGS)
# make does not see flags change: an object built before a change to them
# here would keep exporting what it should not.
$(LIB_OBJS) $(LIB_PIC_OBJS) $(SAN_LIB_OBJS) $(HOOK_LIB_OBJS): Makefile

# The mount (daemon/mount.c) is built on libfuse3 (Debian libfuse3-dev,
# installed by scripts/deps.sh).
# FUSE over io_uring needs libfuse >= 3.18: where the system's is older,
# scripts/fuse3.sh (run by scripts/deps.sh) builds Debian's source package
# into FUSE3_PREFIX as a static library, and that one is linked.
FUSE3_PREFIX ?= $(CURDIR)/build/fuse3/inst
FUSE3_PCDIR  := $(firstword $(dir $(wildcard $(FUSE3_PREFIX)/lib/*/pkgconfig/fuse3.pc \
		$(FUSE3_PREFIX)/lib/pkgconfig/fuse3.pc)))
ifneq ($(FUSE3_PCDIR),)
FUSE_PKGCONFIG := PKG_CONFIG_PATH=$(FUSE3_PCDIR) pkg-config --static
else
FUSE_PKGCONFIG := pkg-config
endif
FUSE_CFLAGS := $(shell $(FUSE_PKGCONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(or $(shell $(FUSE_PKGCONFIG) --libs fuse3 2>/dev/null),-lfuse3) -lm
# mkfs probes and wipes old signatures with libblkid (Debian libblkid-dev);
# FUSE_LIBS is what the command links besides the library.
FUSE_LIBS   += $(or $(shell pkg-config --libs blkid 2>/dev/null),-lblkid)
ifneq ($(wildcard daemon/mount.c),)
ifeq ($(FUSE_CFLAGS),)
$(warning pkg-config finds no fuse3: install libfuse3-dev (bash scripts/deps.sh))
endif
endif
# The daemon is daemon/: mount.c (the launcher) and the rest; the mount
# options' parser (tools/mount_opts.c, libfuse's fuse_opt) is shared with
# tune.  The commands that speak to a mount share the daemon's ioctl
# headers.
FUSE_SRCS := $(wildcard daemon/*.c tools/mount_opts.c)
CMD_SRCS := $(filter-out $(FUSE_SRCS),$(filter tools/%,$(TOOL_SRCS)))
$(CMD_SRCS:%.c=$(B)/obj/%.o) $(CMD_SRCS:%.c=$(SAN)/obj/%.o): EXTRA_CPPFLAGS := -Idaemon
$(FUSE_SRCS:%.c=$(B)/obj/%.o) $(FUSE_SRCS:%.c=$(SAN)/obj/%.o): EXTRA_CPPFLAGS := -Itools -Idaemon $(FUSE_CFLAGS)
# The daemon's objects and the command are built again when the libfuse
# they use changes (scripts/fuse3.sh ran, or the system's was upgraded):
# make sees only the headers' timestamps, not which headers.
FUSE_STAMP := $(B)/fuse-flags
$(shell mkdir -p $(B) && echo '$(FUSE_CFLAGS) $(FUSE_LIBS)' | cmp -s - $(FUSE_STAMP) || \
	echo '$(FUSE_CFLAGS) $(FUSE_LIBS)' > $(FUSE_STAMP))
$(FUSE_SRCS:%.c=$(B)/obj/%.o) $(FUSE_SRCS:%.c=$(SAN)/obj/%.o) $(PROG) $(SAN_PROG): $(FUSE_STAMP)

# ---- libraries ------------------------------------------------------------
# The archive is rebuilt from scratch so removed sources leave no stale
# members; with no sources yet it is a valid empty archive.
$(INTERNAL_LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

# ld -r joins the objects, so calls between them are resolved inside one
# object; then every hidden symbol (all but the API, -fvisibility=hidden)
# becomes local, and a program's own is_head() or crc32c() meets nothing.
$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	@rm -f $@ $(B)/libchunkfs.o
	$(LD) -r -o $(B)/libchunkfs.o $^
	$(OBJCOPY) --localize-hidden $(B)/libchunkfs.o
	$(AR) rcs $@ $(B)/libchunkfs.o

$(SAN_LIB): $(SAN_LIB_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

$(HOOK_LIB): $(HOOK_LIB_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

# With no objects yet, link an empty translation unit so the .so still exists.
$(SHARED_LIB): $(LIB_PIC_OBJS) src/libchunkfs.map
	@mkdir -p $(@D)
	$(CC) -shared -pthread -Wl,-soname,$(SONAME) -Wl,-z,defs \
		-Wl,--version-script=src/libchunkfs.map $(LDFLAGS) -o $@ \
		$(if $(filter %.o,$^),$(filter %.o,$^),-x c /dev/null) $(LDLIBS)

# build/libchunkfs.so -> libchunkfs.so.0 -> libchunkfs.so.0.1.0, as installed.
$(B)/$(SONAME): $(SHARED_LIB)
	ln -sfn $(SOREAL) $@

$(B)/libchunkfs.so: $(B)/$(SONAME)
	ln -sfn $(SONAME) $@

# ---- programs -------------------------------------------------------------
$(B)/chunkfs: $(TOOL_OBJS) $(INTERNAL_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread $(LDFLAGS) -o $@ $(TOOL_OBJS) $(INTERNAL_LIB) $(FUSE_LIBS) $(LDLIBS)

$(SAN)/chunkfs: $(SAN_TOOL_OBJS) $(SAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -pthread $(LDFLAGS) -o $@ $(SAN_TOOL_OBJS) $(SAN_LIB) $(FUSE_LIBS) $(LDLIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(HOOK_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread $(LDFLAGS) -o $@ $< $(HOOK_LIB) $(LDLIBS)

$(SAN)/tests/%: $(SAN)/obj/tests/unit/%.o $(SAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -pthread $(LDFLAGS) -o $@ $< $(SAN_LIB) $(LDLIBS)

# ---- check / run ----------------------------------------------------------
# The optimised build is made too: -O2 enables warnings (-Werror) that -O1
# does not, and `make run` must keep working.
check: WERROR = 1
check: all $(SAN_LIB) $(SAN_PROG) $(SAN_TESTS)
	tests/run.sh $(SAN)

IMAGE ?= chunkfs.img
run:
	bash scripts/deps.sh
	bash scripts/uring-on.sh
	$(MAKE) --no-print-directory all
	bash scripts/run.sh $(IMAGE)

# bench/run.sh: chunkfs against e2fsck, fuse2fs and ext4 (root; SCALE=small|medium|large)
SCALE ?= small
.PHONY: bench
bench:
	bash scripts/deps.sh fio gnuplot-nox time strace
	bash scripts/uring-on.sh
	$(MAKE) --no-print-directory all
	bash bench/run.sh $(SCALE)

# Longer runs of the randomised tests (sanitizer build), and the fuzzer
# (tests/fuzz/run.sh; make check runs it for 20 seconds).
CHUNKFS_CRASH_ROUNDS ?= 5000
CHUNKFS_FSCK_ROUNDS ?= 10000
CHUNKFS_KILL_ROUNDS ?= 300
INJECT_ROUNDS ?= 200
SOAK_SEEDS ?= 200
FUZZ_SECONDS ?= 300
.PHONY: crash-long fill-long fuzz
fill-long: $(B)/tests/test_fill
	CHUNKFS_FILL_LONG=1 $(B)/tests/test_fill

crash-long: $(SAN)/tests/test_crash $(SAN)/tests/test_fsck_random $(SAN_PROG)
	CHUNKFS_CRASH_ROUNDS=$(CHUNKFS_CRASH_ROUNDS) $(SAN)/tests/test_crash
	CHUNKFS_FSCK_ROUNDS=$(CHUNKFS_FSCK_ROUNDS) $(SAN)/tests/test_fsck_random
	CHUNKFS_KILL_ROUNDS=$(CHUNKFS_KILL_ROUNDS) CHUNKFS=$(abspath $(SAN_PROG)) \
		CHUNKFS_SRC=$(CURDIR) bash tests/mount/kill_stress.sh
	INJECT_ROUNDS=$(INJECT_ROUNDS) CHUNKFS=$(abspath $(SAN_PROG)) \
		CHUNKFS_SRC=$(CURDIR) bash tests/mount/inject.sh
	SOAK_SEEDS=$(SOAK_SEEDS) SOAK_FILES=30000 SOAK_SIZE=2G CHUNKFS=$(abspath $(SAN_PROG)) \
		CHUNKFS_SRC=$(CURDIR) bash tests/mount/scrub_soak.sh

fuzz: $(PROG)
	FUZZ_SECONDS=$(FUZZ_SECONDS) CHUNKFS=$(abspath $(PROG)) bash tests/fuzz/run.sh

# ---- install --------------------------------------------------------------
LINKS := mkfs.chunkfs fsck.chunkfs mount.chunkfs mount.fuse.chunkfs

install: all
	@mkdir -p $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    chunkfs.pc.in > $(B)/chunkfs.pc
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
ifneq ($(PROG),)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR)
	$(INSTALL) -m 755 $(PROG) $(DESTDIR)$(BINDIR)/chunkfs
	for l in $(LINKS); do ln -sfn ../bin/chunkfs $(DESTDIR)$(SBINDIR)/$$l || exit 1; done
endif
	$(INSTALL) -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/libchunkfs.a
	$(INSTALL) -m 755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/$(SOREAL)
	ln -sfn $(SOREAL) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libchunkfs.so
	$(INSTALL) -m 644 include/chunkfs.h $(DESTDIR)$(INCLUDEDIR)/chunkfs.h
	$(INSTALL) -m 644 $(B)/chunkfs.pc $(DESTDIR)$(PKGCONFIGDIR)/chunkfs.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		echo ldconfig; ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/chunkfs $(LINKS:%=$(DESTDIR)$(SBINDIR)/%)
	rm -f $(DESTDIR)$(LIBDIR)/libchunkfs.a $(DESTDIR)$(LIBDIR)/$(SOREAL) \
	      $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libchunkfs.so
	rm -f $(DESTDIR)$(INCLUDEDIR)/chunkfs.h $(DESTDIR)$(PKGCONFIGDIR)/chunkfs.pc

# ---- admin: manual pages, completion, Debian package -----------------------
# Their own block: `install` and `uninstall` gain prerequisites here.
MANDIR   := $(PREFIX)/share/man
MAN_PAGES := $(sort $(wildcard man/*.[1-8]))
COMPDIR  := $(PREFIX)/share/bash-completion/completions
COMP_NAMES := mkfs.chunkfs fsck.chunkfs mount.chunkfs mount.fuse.chunkfs

SYSTEMDDIR := $(PREFIX)/lib/systemd/system
SYSTEMD_UNITS := $(sort $(wildcard systemd/*.service systemd/*.timer))
# udev reads /usr/local/lib/udev/rules.d as well as /usr/lib/udev/rules.d
UDEVRULESDIR := $(PREFIX)/lib/udev/rules.d

.PHONY: install-man uninstall-man install-completion uninstall-completion
.PHONY: install-systemd uninstall-systemd install-udev uninstall-udev
install: install-man install-completion install-systemd install-udev
uninstall: uninstall-man uninstall-completion uninstall-systemd uninstall-udev

# chunkfs-scrub@.service and chunkfs-scrub_all.{service,timer}: the weekly
# online check, as e2scrub_all.timer (not enabled: systemctl enable --now
# chunkfs-scrub_all.timer)
install-systemd:
	$(INSTALL) -d $(DESTDIR)$(SYSTEMDDIR)
	$(INSTALL) -m 644 $(SYSTEMD_UNITS) $(DESTDIR)$(SYSTEMDDIR)/

uninstall-systemd:
	rm -f $(SYSTEMD_UNITS:systemd/%=$(DESTDIR)$(SYSTEMDDIR)/%)

# udev/64-chunkfs.rules: the /dev/disk/by-uuid and by-label links of
# chunkfs devices, through `chunkfs probe --export`, named by its full path
# (udev looks for a bare name in its own directory only)
install-udev:
	@mkdir -p $(B)
	sed -e 's|@BINDIR@|$(BINDIR)|g' udev/64-chunkfs.rules.in > $(B)/64-chunkfs.rules
	$(INSTALL) -d $(DESTDIR)$(UDEVRULESDIR)
	$(INSTALL) -m 644 $(B)/64-chunkfs.rules $(DESTDIR)$(UDEVRULESDIR)/64-chunkfs.rules

uninstall-udev:
	rm -f $(DESTDIR)$(UDEVRULESDIR)/64-chunkfs.rules

install-man:
	for p in $(MAN_PAGES); do s=$${p##*.}; \
		$(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s && \
		$(INSTALL) -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

uninstall-man:
	for p in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; done

# bash-completion loads completions/NAME for command NAME: one file, and a
# link for each other name the command is called by.
install-completion:
	$(INSTALL) -d $(DESTDIR)$(COMPDIR)
	$(INSTALL) -m 644 completion/chunkfs $(DESTDIR)$(COMPDIR)/chunkfs
	for n in $(COMP_NAMES); do ln -sfn chunkfs $(DESTDIR)$(COMPDIR)/$$n || exit 1; done

uninstall-completion:
	rm -f $(DESTDIR)$(COMPDIR)/chunkfs $(COMP_NAMES:%=$(DESTDIR)$(COMPDIR)/%)

# make deb: the Debian packages chunkfs, libchunkfs0 and libchunkfs-dev
# (debian/), built by dpkg-buildpackage from a copy of the tree in
# build/deb/ (it writes its results to the parent directory), then checked
# with lintian; the .deb files end up in build/deb/.
DEB_DIR := $(B)/deb
.PHONY: deb
deb:
	bash scripts/deps.sh debhelper dpkg-dev fakeroot lintian
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/chunkfs-$(VERSION)
	tar -c --exclude=./build --exclude=./.git --exclude='./*.img' --exclude=./mnt . | \
		tar -x -C $(DEB_DIR)/chunkfs-$(VERSION)
	# without this make's MAKEFLAGS (B=... from the command line: tests/deb
	# builds in its own directory) the package's own make would clean and
	# build there, deleting the tree it is building from
	# the copy has no build/: the libfuse scripts/fuse3.sh built is this tree's
	cd $(DEB_DIR)/chunkfs-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		FUSE3_PREFIX=$(FUSE3_PREFIX) dpkg-buildpackage -us -uc -b
	lintian --info --display-info $(DEB_DIR)/*.changes | tee $(DEB_DIR)/lintian.txt

# tests/deb/install.sh on the packages just built: lintian clean, install,
# use (mount -t chunkfs, fstab, mkfs/fsck -t, man, pkg-config), remove.
# make check runs the same test (building its own packages), alone after
# every other test.  Needs root.
.PHONY: deb-check
deb-check: deb
	DEB_DIR=$(abspath $(DEB_DIR)) bash tests/deb/install.sh

# build/fuse3 (libfuse built by scripts/fuse3.sh) outlives `make clean`:
# it takes a download to make again.  `make distclean` removes it too.
.PHONY: distclean
clean:
	rm -rf $(filter-out $(B)/fuse3,$(wildcard $(B)/*))

distclean:
	rm -rf $(B)

-include $(ALL_DEPS)
