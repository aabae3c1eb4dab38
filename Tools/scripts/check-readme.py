#!/usr/bin/env python3
"""Checks that every README code excerpt marked with `<!-- example: PATH -->` is still, verbatim
(trailing spaces ignored), part of the example file PATH, which the test suite compiles and runs.
Also checks that every Swift snippet of a DocC getting-started article is part of a compiled file.
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
# DocC getting-started articles (issue 37 item 11): every Swift snippet must be, line for line
# (indentation and blank lines ignored), part of a file the test suite compiles: an example target
# (`Packages/*/Examples`, `Integration/Examples`), a test file, or a package manifest.
compiled = [
    f for pattern in ("Packages/*/Examples/*.swift", "Integration/Examples/*.swift", "Packages/*/Tests/**/*.swift",
                      "Integration/Tests/**/*.swift", "Packages/*/Package.swift")
    for f in root.glob(pattern)
]


def lines_of(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


compiled_lines = {f: "\n" + "\n".join(lines_of(f.read_text(encoding="utf-8"))) + "\n" for f in compiled}
docc_checked = 0
for article in sorted(root.glob("Packages/*/Sources/*/*.docc/GettingStarted.md")):
    for block in re.findall(r"```swift\n(.*?)```", article.read_text(encoding="utf-8"), re.S):
        docc_checked += 1
        wanted = "\n" + "\n".join(lines_of(block)) + "\n"
        if not any(wanted in text for text in compiled_lines.values()):
            rel = article.relative_to(root)
            failures.append(f"{rel}: snippet starting {lines_of(block)[0]!r} is not part of any compiled example or test file")
checked += docc_checked

for f in failures:
    print("check-readme:", f, file=sys.stderr)
print(f"check-readme: {checked - len(failures)} passed, {len(failures)} failed ({docc_checked} of them DocC snippets)")
sys.exit(1 if failures else 0)
