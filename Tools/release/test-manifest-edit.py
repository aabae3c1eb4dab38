#!/usr/bin/env python3
"""Tests of manifest-edit.py (issue 38, items 2 and 3) on this repository's manifests, and of
check-mac-shell.py's rules on the release scripts (run by make test-release)."""
import importlib.util
import pathlib
import subprocess
import sys
import tempfile
import unittest

here = pathlib.Path(__file__).resolve().parent
root = here.parents[1]
spec = importlib.util.spec_from_file_location("manifest_edit", here / "manifest-edit.py")
me = importlib.util.module_from_spec(spec)
spec.loader.exec_module(me)
CORE = (root / "Packages/Core/Package.swift").read_text(encoding="utf-8")
ONBOARDING = (root / "Packages/Onboarding/Package.swift").read_text(encoding="utf-8")
URL = "https://downloads.example.com/rocalytics/Core/0.1.0/CTrackerLibcurl.xcframework.zip"
SUM = "0123456789abcdef" * 4


class ManifestEditTests(unittest.TestCase):
    def test_RM1_core_dependency_becomes_a_versioned_https_dependency(self):
        url = "https://git.example.com/rocalytics/rocalytics-core.git"
        edited = me.core_dependency(ONBOARDING, url, "0.1.0")
        self.assertIn(f'.package(url: "{url}", from: "0.1.0")', edited)
        self.assertNotIn('path: "../Core"', edited)
        # The products name the dependency by its identity (the URL's last component), not "Core".
        self.assertNotIn('package: "Core"', edited)
        self.assertEqual(edited.count('package: "rocalytics-core"'), ONBOARDING.count('package: "Core"'))
        # Nothing else changed.
        self.assertEqual(edited.replace(f'.package(url: "{url}", from: "0.1.0")', '.package(name: "Core", path: "../Core")')
                         .replace('package: "rocalytics-core"', 'package: "Core"'), ONBOARDING)

    def test_RM2_xcframework_path_becomes_url_and_checksum_on_two_lines(self):
        edited = me.xcframework(CORE, URL, SUM)
        # The indentation of the path line, a real newline (BSD sed wrote a literal `n`), no path left.
        self.assertIn(f'        url: "{URL}",\n        checksum: "{SUM}"\n', edited)
        self.assertNotIn('path: "Artifacts/', edited)
        self.assertNotIn('",n', edited)
        self.assertEqual(edited.count("\n"), CORE.count("\n") + 1)

    def test_RM3_anything_but_https_is_refused(self):
        for url in ("file:///tmp/releases/Core.git", "http://git.example.com/Core.git", "", "https://",
                    'https://x/"Core.git', "https://x/Core .git", "git@github.com:rocalytics/Core.git"):
            with self.subTest(url=url), self.assertRaises(me.EditError):
                me.core_dependency(ONBOARDING, url, "0.1.0")
        with self.assertRaises(me.EditError):
            me.xcframework(CORE, "https://downloads.example.com/CTrackerLibcurl.xcframework.tar.gz", SUM)
        with self.assertRaises(me.EditError):
            me.xcframework(CORE, URL, "0" * 63)

    def test_RM4_a_manifest_without_the_text_or_with_it_twice_is_refused(self):
        with self.assertRaises(me.EditError):
            me.core_dependency(CORE, "https://git.example.com/Core.git", "0.1.0")
        with self.assertRaises(me.EditError):
            me.xcframework(ONBOARDING, URL, SUM)
        with self.assertRaises(me.EditError):
            me.xcframework(CORE + CORE, URL, SUM)

    def test_RM7_a_manifest_with_other_path_dependencies_is_refused(self):
        umbrella = (root / "Packages" / "Rocalytics" / "Package.swift").read_text(encoding="utf-8")
        with self.assertRaises(me.EditError):
            me.core_dependency(umbrella, "https://git.example.com/rocalytics-core.git", "0.1.0")

    def test_RM6_released_names_are_distinctive_and_cover_every_package(self):
        # The identity `core` is generic enough to collide in an app's dependency graph (issue 38, item 9).
        packages = sorted(p.parent.name for p in (root / "Packages").glob("*/Package.swift"))
        names = [me.released_name(p) for p in packages]
        self.assertEqual(len(set(names)), len(names))
        for name in names:
            self.assertTrue(name.startswith("rocalytics-"), name)
            self.assertEqual(name, name.lower())
        self.assertEqual(me.released_name("Core"), "rocalytics-core")
        self.assertEqual(me.identity("https://x/y/Rocalytics-Core.git/"), "rocalytics-core")
        with self.assertRaises(me.EditError):
            me.released_name("Unknown")
        done = subprocess.run([sys.executable, str(here / "manifest-edit.py"), "released-name", "Onboarding"],
                              capture_output=True, text=True)
        self.assertEqual((done.returncode, done.stdout), (0, "rocalytics-onboarding\n"))

    def test_RM5_the_command_edits_in_place_and_leaves_no_other_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifest = pathlib.Path(tmp) / "Package.swift"
            manifest.write_text(CORE, encoding="utf-8")
            done = subprocess.run([sys.executable, str(here / "manifest-edit.py"), "xcframework", str(manifest), URL, SUM],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(manifest.read_text(encoding="utf-8"), me.xcframework(CORE, URL, SUM))
            self.assertEqual(sorted(p.name for p in pathlib.Path(tmp).iterdir()), ["Package.swift"])
            refused = subprocess.run([sys.executable, str(here / "manifest-edit.py"), "core-dependency", str(manifest),
                                      "file:///tmp/Core.git", "0.1.0"], capture_output=True, text=True)
            self.assertEqual(refused.returncode, 1)
            self.assertIn("must be an https:// URL", refused.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
