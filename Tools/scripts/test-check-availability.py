#!/usr/bin/env python3
"""Tests of check-availability.py (issue 27, items 1 and 4): the fixtures in fixtures/availability/
must give exactly the lines marked `FLAG` (flagged.swift) and none (clean.swift); the floors
come from Package.swift and XcodeGen specs as written in this repository."""
import importlib.util
import pathlib
import unittest

here = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_availability", here / "check-availability.py")
ca = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ca)
FLOORS = {"iOS": (15, 0), "macOS": (12, 0), "tvOS": (15, 0), "visionOS": (1, 0)}
FIXTURES = here / "fixtures" / "availability"


def flagged_lines(source, floors=FLOORS, local=frozenset()):
    return sorted({line for line, _, _, _ in ca.scan_source(source, floors, local)})


def marked_lines(source):
    return sorted(k + 1 for k, line in enumerate(source.splitlines()) if "// FLAG" in line)


class CheckAvailabilityTests(unittest.TestCase):
    def test_AV1_flagged_fixture_reports_exactly_the_marked_lines(self):
        source = (FIXTURES / "flagged.swift").read_text(encoding="utf-8")
        self.assertTrue(marked_lines(source))
        self.assertEqual(flagged_lines(source), marked_lines(source))

    def test_AV2_clean_fixture_reports_nothing(self):
        source = (FIXTURES / "clean.swift").read_text(encoding="utf-8")
        self.assertEqual(ca.scan_source(source, FLOORS), [])

    def test_AV3_a_floor_that_has_the_api_needs_no_gate(self):
        source = "let m = Mutex(0)\nfunc f() async throws { try await Task.sleep(for: .seconds(1)) }\n"
        self.assertEqual(flagged_lines(source, {"macOS": (15, 0)}), [])
        self.assertEqual(flagged_lines(source, {"macOS": (14, 0)}), [1])
        self.assertEqual(flagged_lines(source, {"iOS": (15, 0)}), [1, 2])

    def test_AV4_a_type_the_package_declares_is_its_own(self):
        self.assertEqual(flagged_lines("let m = Mutex(0)\n", local=frozenset({"Mutex"})), [])

    def test_AV7_types_marked_unavailable_in_extensions_are_too(self):
        source = "#if canImport(UIKit)\nlet system = UIKitLifecycleSystem()\n#endif\n"
        self.assertEqual(flagged_lines(source), [])
        found = ca.scan_source(source, FLOORS, extension_unsafe=frozenset({"UIKitLifecycleSystem"}))
        self.assertEqual([line for line, *_ in found], [2])
        self.assertEqual(set(found[0][2]), {
            "@available(iOSApplicationExtension, unavailable)", "@available(macCatalystApplicationExtension, unavailable)",
            "@available(tvOSApplicationExtension, unavailable)", "@available(visionOSApplicationExtension, unavailable)"})
        marked = ca.EXTENSION_MARKED.findall(
            "@available(iOSApplicationExtension, unavailable)\n@available(tvOSApplicationExtension, unavailable)\n"
            "public final class UIKitLifecycleSystem: AppLifecycleSystem {}")
        self.assertEqual(marked, ["UIKitLifecycleSystem"])

    def test_AV8_every_rule_has_a_fixture_line_only_it_flags(self):
        # Removing any one rule (of every table, so future rules too) must change the flagged lines of
        # the fixture, which AV1 pins: a rule whose deletion changes nothing is tested by nothing.
        source = (FIXTURES / "flagged.swift").read_text(encoding="utf-8")
        everything = flagged_lines(source)
        names = ca.rule_names()
        self.assertIn("ExecutorJob", names)
        self.assertIn("string processing algorithms", names)
        unpinned = [name for name in names
                    if sorted({line for line, *_ in ca.scan_source(source, FLOORS, skip=frozenset({name}))}) == everything]
        self.assertEqual(unpinned, [], "rules no fixture line pins (add a line in flagged.swift only each flags)")

    def test_AV9_test_targets_are_scanned_and_process_is_macos_only(self):
        # The Apple CI runs Core's tests on the simulators: its test target is scanned like its sources.
        root = here.parents[1]
        dirs = [d for d, _ in ca.packages(root)]
        core = [str(p.relative_to(root)) for p in ca.swift_files(root / "Packages/Core", dirs)]
        self.assertIn("Packages/Core/Tests/TrackerCoreTests/SecurityTests.swift", core)
        source = "import Foundation\nlet p = Process()\nlet h = Host.current()\nlet q = Pipe()\n"
        found = ca.scan_source(source, FLOORS)
        self.assertEqual([line for line, *_ in found], [2, 3])
        self.assertEqual(found[0][2], ["iOS (unavailable there)", "tvOS (unavailable there)", "visionOS (unavailable there)"])
        self.assertEqual(flagged_lines(source, {"macOS": (12, 0)}), [])
        self.assertEqual(flagged_lines("#if os(macOS) || os(Linux)\nlet p = Process()\n#endif\n"), [])

    def test_AV5_floors_from_manifests(self):
        self.assertEqual(
            ca.package_floors('platforms: [.iOS(.v15), .macOS(.v12), .tvOS("15.4"), .visionOS(.v1)],'),
            {"iOS": (15, 0), "macOS": (12, 0), "tvOS": (15, 4), "visionOS": (1, 0)})
        self.assertIsNone(ca.package_floors("let package = Package(name: \"X\")"))
        self.assertEqual(ca.project_floors('options:\n  deploymentTarget:\n    iOS: "15.0"\n  x: 1\n'), {"iOS": (15, 0)})

    def test_AV6_the_repository_packages_are_found_with_their_floors(self):
        root = here.parents[1]
        found = {str(d.relative_to(root)): f for d, f in ca.packages(root)}
        self.assertEqual(found["Packages/Core"], FLOORS)
        self.assertEqual(found["Examples/iOSApp"], {"iOS": (15, 0)})


if __name__ == "__main__":
    unittest.main(verbosity=1)
