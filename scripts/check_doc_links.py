#!/usr/bin/env python3
"""Checks every relative link in README.md and docs/**/*.md: the file it names
must exist, and a #fragment must match a heading of that file (GitHub's
anchors: lower case, punctuation dropped, spaces to hyphens, -1, -2, ... for
repeats). Links to http(s) and mailto are not followed. Exit status 1 and one
line per broken link when any is broken.

    /usr/bin/python3 scripts/check_doc_links.py
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks, inline code removed."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield n, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                inside = not inside
                continue
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if inside or not m:
                continue
            base = slug(m.group(2))
            k = seen.get(base, 0)
            seen[base] = k + 1
            out.add(base if k == 0 else f"{base}-{k}")
    return out


def broken_links(files):
    """(broken: ["file:line: target: why"], links checked) over the Markdown files `files`."""
    broken, checked = [], 0
    for path in files:
        for n, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"^(https?:|mailto:)", target):
                    continue
                checked += 1
                file_part, _, fragment = target.partition("#")
                dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                where = f"{os.path.relpath(path, ROOT)}:{n}: {target}"
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file")
                elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    broken.append(f"{where}: no heading #{fragment} in {os.path.relpath(dest, ROOT)}")
    return broken, checked


def main():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    broken, checked = broken_links(files)
    for b in broken:
        print(b)
    print(f"{checked} relative links in {len(files)} files, {len(broken)} broken")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
