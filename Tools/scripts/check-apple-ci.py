#!/usr/bin/env python3
"""Checks the Apple CI's names against what Xcode generates (issue 27, item 7), and its shape
(issue 38, item 6): one step per destination, each run after a failed one, tvOS and visionOS
downloaded first, only real Xcode build settings, the example widget's bundle id (as XcodeGen
computes it) prefixed by the app's, and a job that compiles AppleSetupExample.swift's UIKit block.

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

# --- issue 38, item 6 ---------------------------------------------------------------------------

def jobs_of(text):
    """{job id: its text} of a workflow (jobs at two spaces under `jobs:`)."""
    body = text.split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([\w-]+):\s*$", body, flags=re.M)
    return {parts[k]: parts[k + 1] for k in range(1, len(parts), 2)}


def steps_of(job):
    """Each step's text (items at six spaces under `steps:`)."""
    if "\n    steps:\n" not in job:
        return []
    steps = re.split(r"^      - ", job.split("\n    steps:\n", 1)[1], flags=re.M)
    return [re.sub(r"^\s*#.*$", "", s, flags=re.M) for s in steps if s.strip()]


# Build settings the CI passes to xcodebuild must be Xcode build settings (Apple's Build settings
# reference, developer.apple.com/documentation/xcode/build-settings-reference: CODE_SIGNING_ALLOWED,
# SWIFT_TREAT_WARNINGS_AS_ERRORS, APPLICATION_EXTENSION_API_ONLY). `APPLICATION_EXTENSION_API_ONLY_CHECK`
# is none: xcodebuild takes any NAME=VALUE silently, so a misspelt setting checks nothing.
KNOWN_SETTINGS = {"CODE_SIGNING_ALLOWED", "SWIFT_TREAT_WARNINGS_AS_ERRORS", "APPLICATION_EXTENSION_API_ONLY"}
DOWNLOADED = {"tvOS": "tvOS", "visionOS": "visionOS"}  # platforms hosted images often lack


def ci_structure_problems(text):
    problems = []
    for job_id, job in jobs_of(text).items():
        downloaded = set()
        for step in steps_of(job):
            run = (step.split("run:", 1)[1] if "run:" in step else "").replace("\\\n", " ")
            for name in re.findall(r"-downloadPlatform\s+(\w+)", run):
                downloaded.add(name)
            commands = re.findall(r"xcodebuild\s+(?:build|test|archive)\b[^\n]*", run)
            for command in commands:
                for setting in re.findall(r"(?<![\w-])([A-Z][A-Z0-9_]+)=", command):
                    if setting not in KNOWN_SETTINGS:
                        problems.append(f"apple.yml job {job_id}: {setting} is not an Xcode build setting")
            destinations = re.findall(r"-destination\s+(\S+)", run) + re.findall(r"for\s+\w+\s+in\s+'generic/", run)
            if len(destinations) > 1 or re.search(r"for\s+\w+\s+in\s+'generic/platform", run):
                problems.append(f"apple.yml job {job_id}: one step builds several destinations; a missing platform "
                                "fails them all (one step per destination)")
            for platform, download in DOWNLOADED.items():
                if re.search(rf"generic/platform={platform}\b", run) and download not in downloaded:
                    problems.append(f"apple.yml job {job_id}: builds for {platform} without an earlier "
                                    f"`xcodebuild -downloadPlatform {download}` step")
            if destinations and "xcodebuild" in run and job_id == "xcodebuild" and "!cancelled()" not in step:
                problems.append(f"apple.yml job {job_id}: a destination step without `if: ${{{{ !cancelled() }}}}` "
                                "is skipped when an earlier destination fails")
    return problems


def xcodegen_bundle_ids(spec_text):
    """{target: PRODUCT_BUNDLE_IDENTIFIER} as XcodeGen computes them: a target's own setting, else
    `bundleIdPrefix.<name>` with the name stripped to alphanumerics, hyphens and periods and
    underscores made hyphens (XcodeGen ProjectSpec.md, `bundleIdPrefix`)."""
    prefix = re.search(r"^\s+bundleIdPrefix:\s*(\S+)", spec_text, re.M).group(1)
    targets = spec_text.split("\ntargets:\n", 1)[1].split("\nschemes:\n", 1)[0]
    ids, kinds, embedded = {}, {}, {}
    for name, body in re.findall(r"^  (\w[\w-]*):\s*\n((?:    .*\n|\s*\n|  #.*\n)*)", targets, re.M):
        own = re.search(r"^\s+PRODUCT_BUNDLE_IDENTIFIER:\s*\"?([^\s\"]+)", body, re.M)
        generated = prefix + "." + re.sub(r"[^A-Za-z0-9.-]", "", name.replace("_", "-"))
        ids[name] = own.group(1) if own else generated
        kinds[name] = re.search(r"^    type:\s*(\S+)", body, re.M).group(1)
        embedded[name] = re.findall(r"-\s*target:\s*(\w+)\s*\n\s+embed:\s*true", body)
    return ids, kinds, embedded


def bundle_id_problems(spec_text):
    ids, kinds, embedded = xcodegen_bundle_ids(spec_text)
    problems = []
    for app, children in embedded.items():
        for child in children:
            if not ids[child].startswith(ids[app] + "."):
                problems.append(f"project.yml: {child} ({kinds[child]}) has bundle id {ids[child]}, not prefixed by "
                                f"{app}'s {ids[app]} + '.': Xcode's embedded-binary validation rejects it")
    return problems


def apple_setup_example_problems(text):
    # The UIKit block of AppleSetupExample.swift compiles only in the Integration package built for a
    # UIKit destination: some job must do that, with the scheme Xcode generates for it.
    want = expected_scheme(root / "Integration")
    if not (root / "Integration/Examples/AppleSetupExample.swift").exists():
        return ["Integration/Examples/AppleSetupExample.swift is missing: nothing compiles its UIKit block"]
    for job_id, job in jobs_of(text).items():
        if re.search(r"working-directory:\s*Integration\b", job) and re.search(
                rf"xcodebuild\s+build\s+-scheme\s+{re.escape(want)}\s+-destination\s+'generic/platform=iOS'", job):
            return []
    return [f"apple.yml: no job builds the Integration package (scheme {want}) for iOS, so the UIKit block of "
            "AppleSetupExample.swift is compiled nowhere"]


checked += 1
failures += ci_structure_problems(workflow)
failures += bundle_id_problems(spec)
failures += apple_setup_example_problems(workflow)

for f in failures:
    print("check-apple-ci:", f, file=sys.stderr)
print(f"check-apple-ci: {checked} names checked, {len(failures)} wrong")
sys.exit(1 if failures else 0)
