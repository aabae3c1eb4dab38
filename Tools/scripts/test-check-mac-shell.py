#!/usr/bin/env python3
"""Tests of check-mac-shell.py (issue 38, item 2): each GNU-only form is flagged on its line, the
portable forms the Mac scripts use are not, and the scan covers the scripts that run on a Mac."""
import importlib.util
import pathlib
import unittest

here = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_mac_shell", here / "check-mac-shell.py")
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)

FLAGGED = r'''
sed -i -E "s#a#b#" Package.swift
sed -i "s/a/b/" f
sed -Ei 's/a/b/' f
sed --in-place 's/a/b/' f
x=$(sed -E "s#path: \"A\"#url: \"$url\",\n        checksum: \"$c\"#" f)
grep -P '\d+' f
out=$(find . -maxdepth 1 -printf '%f ')
date -d yesterday +%s
stat -c %s f
head -n -1 f
base64 -w0 f
readlink -f "$0"
tac f | head -1
sha256sum f
'''

CLEAN = r'''
# sed -i -E "s/comment/is not code/" f
sed 's/ $//'
sed -E 's/\$(INODE64|UNIX2003)$//' | sort -u
sed -i.bak 's/a/b/' f && rm f.bak
core=$(grep -m1 -E '^## \[[0-9]+\]' CHANGELOG.md | sed -E 's/^## \[([^]]+)\].*/\1/')
printf 'sed -i -E and find -printf in a message\n'
actual=$(shasum -a 256 "$zip" 2>/dev/null || sha256sum "$zip")
tr '\n' ' ' <<<"$1" | sed 's/ $//'
head -n 1 f
grep -o 'Name[A-Za-z]*' f | sed 's/Name//' | sort -u
'''


class CheckMacShellTests(unittest.TestCase):
    def test_MS1_each_gnu_only_form_is_flagged_on_its_line(self):
        lines = FLAGGED.strip("\n").split("\n")
        flagged = sorted({n for n, _ in ms.scan(FLAGGED.strip("\n"))})
        self.assertEqual(flagged, list(range(1, len(lines) + 1)), ms.scan(FLAGGED.strip("\n")))
        messages = [m for _, m in ms.scan('sed -i -E "s#a#b\\n c#" f')]
        self.assertEqual(len(messages), 2, messages)

    def test_MS2_the_portable_forms_are_not(self):
        self.assertEqual(ms.scan(CLEAN), [])

    def test_MS3_the_scripts_that_run_on_a_mac_are_scanned_and_exist(self):
        root = here.parents[1]
        for path in ("Tools/release/release.sh", "Tools/curl-apple/build.sh", "Tools/curl-apple/lib.sh"):
            self.assertIn(path, ms.MAC_SCRIPTS)
        for path in ms.MAC_SCRIPTS:
            self.assertTrue((root / path).is_file(), path)
        # Every script build.sh or release.sh sources or runs from the repository is in the list.
        for script in ("Tools/release/release.sh", "Tools/curl-apple/build.sh"):
            text = (root / script).read_text(encoding="utf-8")
            for used in ms.sourced(text, str(pathlib.PurePath(script).parent)):
                if used.endswith(".sh"):
                    self.assertIn(used, ms.MAC_SCRIPTS, f"{script} uses {used}")


if __name__ == "__main__":
    unittest.main(verbosity=1)
