#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check that a manual page and the --help it documents agree.

    man_coverage.py CHUNKFS MANDIR PAGE

PAGE is one of chunkfs.8, mkfs.chunkfs.8, fsck.chunkfs.8, mount.chunkfs.8,
chunkfs-scrub.8.
Prints one line per disagreement (an option or command in --help missing
from the page, or documented in the page but unknown to --help) and exits 1
if there is any; exits 0 when they agree.

What counts as documented, in the mdoc source:
  options       every `Fl x` (`Fl -long` is --long; `Fl abc`, a bundle, is
                -a -b -c) in the page, or for chunkfs.8 in the command's
                item of the COMMANDS list (other options: top-level help);
  commands      the top-level `.It Cm NAME` items of chunkfs.8's COMMANDS;
  mount options the top-level `.It Cm NAME` items of mount.chunkfs.8's
                MOUNT OPTIONS list (libfuse's and fstab's options are
                named in prose there, as --help refers to them in one line).
What counts in --help: the options of the usage line(s), options starting
an indented line (and those after ", " or two spaces on it), the command
list of `chunkfs --help`, and the indented option words under "Options (-o".
"""
import re
import subprocess
import sys

DEDICATED = {"mkfs": "mkfs.chunkfs.8", "fsck": "fsck.chunkfs.8",
             "mount": "mount.chunkfs.8", "scrub": "chunkfs-scrub.8"}
MACRO = re.compile(r"^[A-Z][a-z]{1,2}$")
OPT = r"--?[A-Za-z][\w-]*"


def run_help(chunkfs, *args):
    r = subprocess.run([chunkfs, *args, "--help"], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"{chunkfs} {' '.join(args)} --help exited {r.returncode}")
    return r.stdout


def help_options(text):
    opts = set()
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].strip():    # the usage paragraph
        opts.update(re.findall(r"(?:^|[\s\[|])(" + OPT + r")", lines[i]))
        i += 1
    for line in lines[i:]:
        if re.match(r"^\s+-", line):
            opts.update(re.findall(r"(?:^\s+|,\s*|\s{2,})(" + OPT + r")", line))
    return opts


def help_commands(text):
    m = re.search(r"^Commands:\n((?:  .*\n)+)", text, re.M)
    return set(re.findall(r"^  ([a-z]+)\s", m.group(1), re.M)) if m else set()


def help_mount_options(text):
    m = re.search(r"^Options \(-o.*\n((?:\s+.*\n)+)", text, re.M)
    names = set()
    for line in (m.group(1).splitlines() if m else []):
        for piece in line.split(","):
            w = re.match(r"\s*([a-z_]+)(=\S+)?(?=\s{2,}|\s*$|\s+\(default\))",
                         piece)
            if w:
                names.add(w.group(1))
    return names


def mdoc_flags(lines):
    """Options named by Fl in mdoc macro lines."""
    opts = set()
    for line in lines:
        if not line.startswith("."):
            continue
        toks = line[1:].split()
        for j, t in enumerate(toks):
            if t != "Fl":
                continue
            for a in toks[j + 1:]:
                if MACRO.match(a) or not re.match(r"^-?[A-Za-z][\w-]*$", a):
                    break
                if a.startswith("-"):
                    opts.add("-" + a)
                else:
                    opts.update("-" + c for c in a)
    return opts


def section(lines, name):
    out, on = [], False
    for line in lines:
        if line.startswith(".Sh "):
            on = line[4:].strip() == name
        elif on:
            out.append(line)
    return out


def top_items(lines):
    """{NAME: lines of its item} for the first-level items of a list."""
    items, cur, depth = {}, None, 0
    for line in lines:
        if line.startswith(".Bl"):
            depth += 1
        elif line.startswith(".El"):
            depth -= 1
        elif depth == 1 and line.startswith(".It "):
            toks = line.split()
            cur = toks[2] if len(toks) > 2 and toks[1] == "Cm" else None
            if cur:
                items[cur] = []
        if cur:
            items[cur].append(line)
    return items


def compare(what, in_help, in_page, problems):
    for o in sorted(in_help - in_page):
        problems.append(f"{what} {o}: in --help, not in the page")
    for o in sorted(in_page - in_help):
        problems.append(f"{what} {o}: in the page, not in --help")


def main():
    chunkfs, mandir, page = sys.argv[1:4]
    lines = open(f"{mandir}/{page}", encoding="utf-8").read().splitlines()
    problems = []
    if page == "chunkfs.8":
        top = run_help(chunkfs)
        cmds = help_commands(top)
        items = top_items(section(lines, "COMMANDS"))
        compare("command", cmds, set(items), problems)
        inside = {ln for body in items.values() for ln in body}
        outside = [ln for ln in lines if ln not in inside]
        compare("option", help_options(top), mdoc_flags(outside), problems)
        for c in sorted(cmds & set(items)):
            if c in DEDICATED:
                if f"Xr {DEDICATED[c][:-2]} 8" not in " ".join(items[c]):
                    problems.append(f"command {c}: no reference to "
                                    f"{DEDICATED[c]}")
                continue
            compare(f"{c}: option", help_options(run_help(chunkfs, c)),
                    mdoc_flags(items[c]), problems)
    else:
        cmd = {v: k for k, v in DEDICATED.items()}[page]
        text = run_help(chunkfs, cmd)
        compare("option", help_options(text), mdoc_flags(lines), problems)
        if cmd == "mount":
            compare("mount option", help_mount_options(text),
                    set(top_items(section(lines, "MOUNT OPTIONS"))), problems)
    for p in problems:
        print(f"{page}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
