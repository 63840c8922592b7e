#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check `chunkfs info --map` text or an --svg file against `info --json`.

    map_check.py text JSON MAPFILE      map_check.py svg JSON SVGFILE

Recomputes each chunk's cell from the JSON (state, tenths of blocks and
inodes used, continuation / cross-chunk marks) and compares it with what
was drawn; for SVG, also that the file parses as XML with an <svg> root and
one group per chunk whose class and tooltip carry the same facts.  Prints
each mismatch; exit 1 if any.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET


def fullness(total, free):
    used = max(total - free, 0)
    if used == 0 or total == 0:
        return "."
    if used >= total:
        return "#"
    return str(used * 10 // total)


def cell(c):
    if c["state"] == "unreadable":
        return "?"
    st = c["state_code"]
    s = "E" if st & 2 else ("D" if st & 1 else "C")
    link = "*" if c["conts"] and c["xrefs"] else \
        "c" if c["conts"] else "x" if c["xrefs"] else " "
    return s + fullness(c["blocks"], c["free_blocks"]) + \
        fullness(c["inodes"], c["free_inodes"]) + link


def check_text(info, text):
    bad = []
    cells = []
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+) (( .{4})+)\s*$", line)
        if m and "+" not in line:
            row = m.group(2) + " " * 5
            cells += [row[i + 1:i + 5] for i in range(0, len(m.group(2)), 5)]
    if len(cells) != len(info["chunks"]):
        bad.append(f"{len(cells)} cells for {len(info['chunks'])} chunks")
    for c, got in zip(info["chunks"], cells):
        want = cell(c)
        if got.rstrip() != want.rstrip():
            bad.append(f"chunk {c['index']}: drawn {got!r}, want {want!r}")
    return bad


def check_svg(info, path):
    bad = []
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    if root.tag != ns + "svg":
        return [f"root element is {root.tag}"]
    groups = [g for g in root.iter(ns + "g")
              if "chunk" in g.get("class", "").split()]
    if len(groups) != len(info["chunks"]):
        bad.append(f"{len(groups)} chunk groups for {len(info['chunks'])}")
    for c, g in zip(info["chunks"], groups):
        word = {"C": "clean", "D": "dirty", "E": "error", "?": "unreadable"}[
            cell(c)[0]]
        title = g.find(ns + "title").text
        if word not in g.get("class").split():
            bad.append(f"chunk {c['index']}: class {g.get('class')}, want {word}")
        if c["state"] == "unreadable":
            continue
        want = (f"chunk {c['index']}: {word}; blocks {c['used_blocks']} of "
                f"{c['blocks']} used; inodes {c['used_inodes']} of "
                f"{c['inodes']} used; {c['conts']} continuations; "
                f"{c['xrefs']} cross-chunk references")
        if not title.startswith(want):
            bad.append(f"title {title!r}, want {want!r}...")
    return bad


def main():
    kind, jpath, path = sys.argv[1:4]
    info = json.load(open(jpath))
    if kind == "text":
        bad = check_text(info, open(path).read())
    else:
        bad = check_svg(info, path)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
