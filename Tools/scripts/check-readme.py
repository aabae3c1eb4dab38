#!/usr/bin/env python3
"""Checks that every README code excerpt marked with `<!-- example: PATH -->` is still, verbatim
(trailing spaces ignored), part of the example file PATH, which the test suite compiles and runs.
Exits 1 listing the excerpts that drifted."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
readme = (root / "README.md").read_text(encoding="utf-8")
pattern = re.compile(r"<!--\s*example:\s*(\S+)\s*-->\s*\n```[a-z]*\n(.*?)```", re.S)


def norm(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


checked, failures = 0, []
for match in pattern.finditer(readme):
    path, snippet = match.group(1), match.group(2)
    file = root / path
    checked += 1
    if not file.is_file():
        failures.append(f"{path}: file missing")
    elif norm(snippet) not in norm(file.read_text(encoding="utf-8")):
        failures.append(f"{path}: README excerpt starting {snippet.strip().splitlines()[0]!r} is not in the file")
for f in failures:
    print("check-readme:", f, file=sys.stderr)
print(f"check-readme: {checked - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
