#!/usr/bin/env python3
"""Checks the Apple CI's names against what Xcode generates (issue 27, item 7).

.github/workflows/apple.yml builds each package with `xcodebuild -scheme NAME`: for a package
opened on its own Xcode generates one scheme per product and, when there are several products
(or none), `<PackageName>-Package` besides; a package with one product has only that product's
scheme. The example app's job must use the project and the scheme its XcodeGen spec
(Examples/iOSApp/project.yml) generates. Exits 1 listing each name that does not exist.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
workflow = (root / ".github/workflows/apple.yml").read_text(encoding="utf-8")


def expected_scheme(package_dir):
    manifest = (package_dir / "Package.swift").read_text(encoding="utf-8")
    name = re.search(r'Package\(\s*name:\s*"([^"]+)"', manifest).group(1)
    products = re.findall(r'\.(?:library|executable|plugin)\(\s*name:\s*"([^"]+)"', manifest)
    return products[0] if len(products) == 1 else f"{name}-Package"


failures, checked = [], 0
for package, scheme in re.findall(r"\{\s*package:\s*(\w+),\s*scheme:\s*([\w-]+)\s*\}", workflow):
    checked += 1
    want = expected_scheme(root / "Packages" / package)
    if scheme != want:
        failures.append(f"apple.yml: Packages/{package} has no scheme {scheme!r}; Xcode generates {want!r}")
packages = sorted(p.parent.name for p in (root / "Packages").glob("*/Package.swift"))
listed = re.findall(r"\{\s*package:\s*(\w+),", workflow)
for p in packages:
    if p not in listed:
        failures.append(f"apple.yml: Packages/{p} is not built by xcodebuild")

spec = (root / "Examples/iOSApp/project.yml").read_text(encoding="utf-8")
project = re.search(r"^name:\s*(\S+)", spec, re.M).group(1)
schemes = re.findall(r"^  (\w+):", spec.split("\nschemes:\n", 1)[1], re.M) if "\nschemes:\n" in spec else []
for used in re.findall(r"-project\s+(\S+)\.xcodeproj", workflow):
    checked += 1
    if used != project:
        failures.append(f"apple.yml: the example project is {project}.xcodeproj, not {used}.xcodeproj")
example_job = workflow.split("example-app:", 1)[1]
for used in re.findall(r"-scheme\s+(\S+)", example_job):
    checked += 1
    if used not in schemes:
        failures.append(f"apple.yml: the example project has no scheme {used!r} (project.yml: {', '.join(schemes)})")

for f in failures:
    print("check-apple-ci:", f, file=sys.stderr)
print(f"check-apple-ci: {checked} names checked, {len(failures)} wrong")
sys.exit(1 if failures else 0)
