#!/usr/bin/env python3
"""The edits release.sh makes to a released package's Package.swift (issue 38, item 2).

They were `sed -i -E` with a `\\n` in the replacement: GNU sed only. BSD sed (macOS, where the
XCFramework zip is built and a release is likely made) takes `-E` as `-i`'s backup suffix, writes a
literal `n` and leaves `Package.swift-E` behind. Python behaves the same on both, and each edit
fails unless the text it replaces occurs exactly once.

    manifest-edit.py core-dependency MANIFEST URL VERSION
        `.package(name: "Core", path: "../Core")` -> `.package(url: "URL", from: "VERSION")`, and
        every `package: "Core"` -> `package: "<URL's identity>"` (SwiftPM names a URL dependency by
        the last path component of its URL, lowercased, without `.git`)
    manifest-edit.py released-name PACKAGE
        the released repository's name of a monorepo package (issue 38, item 9): `rocalytics-core`
        and so on, not `core`, whose package identity is generic enough to collide in an app's
        dependency graph
    manifest-edit.py xcframework MANIFEST URL CHECKSUM
        `path: "Artifacts/CTrackerLibcurl.xcframework"` -> `url: "URL",` + `checksum: "CHECKSUM"`

URL must be https (a released manifest never names the releaser's disk); exit 1 with the reason
otherwise. Tested on Linux by test-manifest-edit.py (make test-release).
"""
import pathlib
import re
import sys

CORE_PATH_DEPENDENCY = re.compile(r'\.package\(\s*name:\s*"Core",\s*path:\s*"\.\./Core"\s*\)')
XCFRAMEWORK_PATH = re.compile(r'^(?P<indent>[ \t]*)path:\s*"Artifacts/CTrackerLibcurl\.xcframework"', re.M)
HTTPS_URL = re.compile(r'https://[^\s"\\]+')
CHECKSUM = re.compile(r"[0-9a-f]{64}")
VERSION = re.compile(r"\d+\.\d+\.\d+")


# The released repositories (and so the package identities consumers see), per monorepo package.
RELEASED_NAMES = {
    "Core": "rocalytics-core",
    "Onboarding": "rocalytics-onboarding",
    "Paywall": "rocalytics-paywall",
    "RocalyticsClient": "rocalytics-client",
    "Score": "rocalytics-score",
    "Rocalytics": "rocalytics-kit",
}
OTHER_PATH_DEPENDENCY = re.compile(r'\.package\(\s*name:\s*"[^"]+",\s*path:\s*"\.\./[^"]+"\s*\)')
CORE_PRODUCT_PACKAGE = re.compile(r'(\bpackage:\s*)"Core"')


class EditError(Exception):
    """A manifest that does not have the expected text, or an argument that may not go into it."""


def _replace_once(pattern, text, replacement, what):
    found = list(pattern.finditer(text))
    if len(found) != 1:
        raise EditError(f"expected {what} exactly once in the manifest, found it {len(found)} times")
    m = found[0]
    return text[:m.start()] + replacement(m) + text[m.end():]


def require_https(url, name="URL"):
    if not HTTPS_URL.fullmatch(url or ""):
        raise EditError(f"{name} must be an https:// URL without spaces, quotes or backslashes, got '{url}'")


def released_name(package):
    """The released repository's name of `package` (a monorepo package directory name)."""
    if package not in RELEASED_NAMES:
        raise EditError(f"no released name for package '{package}' (manifest-edit.py RELEASED_NAMES)")
    return RELEASED_NAMES[package]


def identity(url):
    """SwiftPM's identity of a URL dependency: the last path component, lowercased, without `.git`."""
    last = url.rstrip("/").rsplit("/", 1)[-1]
    return (last[:-4] if last.endswith(".git") else last).lower()


def core_dependency(text, url, version):
    """Core's path dependency as a versioned URL dependency on Core's released repository, and the
    products' `package: "Core"` as that repository's identity."""
    require_https(url)
    if not VERSION.fullmatch(version or ""):
        raise EditError(f"Core's version must be x.y.z, got '{version}'")
    edited = _replace_once(CORE_PATH_DEPENDENCY, text, lambda m: f'.package(url: "{url}", from: "{version}")',
                           'Core\'s path dependency `.package(name: "Core", path: "../Core")`')
    if not CORE_PRODUCT_PACKAGE.search(edited):
        raise EditError('no `package: "Core"` product reference in the manifest')
    others = OTHER_PATH_DEPENDENCY.findall(edited)
    if others:
        # The umbrella (`Packages/Rocalytics`) joins several packages: each would need its own
        # released URL; until the release tool rewrites them all, it refuses instead of
        # publishing a manifest that points at sibling folders.
        raise EditError(f"path dependencies other than Core remain: {', '.join(others)}")
    return CORE_PRODUCT_PACKAGE.sub(lambda m: f'{m.group(1)}"{identity(url)}"', edited)


def xcframework(text, url, checksum):
    """Core's local XCFramework path as the URL and SwiftPM checksum of its published zip."""
    require_https(url)
    if not url.endswith(".zip"):
        raise EditError(f"the XCFramework URL must name a .zip, got '{url}'")
    if not CHECKSUM.fullmatch(checksum or ""):
        raise EditError(f"'{checksum}' is not a SwiftPM checksum (64 lowercase hex digits)")
    return _replace_once(XCFRAMEWORK_PATH, text,
                         lambda m: f'{m["indent"]}url: "{url}",\n{m["indent"]}checksum: "{checksum}"',
                         'the XCFramework\'s `path: "Artifacts/CTrackerLibcurl.xcframework"`')


EDITS = {"core-dependency": core_dependency, "xcframework": xcframework}


def main(argv):
    if len(argv) == 3 and argv[1] == "released-name":
        try:
            print(released_name(argv[2]))
        except EditError as error:
            print(f"manifest-edit: {error}", file=sys.stderr)
            return 1
        return 0
    if len(argv) != 5 or argv[1] not in EDITS:
        print("usage: manifest-edit.py core-dependency|xcframework MANIFEST URL VERSION|CHECKSUM\n"
              "       manifest-edit.py released-name PACKAGE", file=sys.stderr)
        return 2
    manifest = pathlib.Path(argv[2])
    try:
        edited = EDITS[argv[1]](manifest.read_text(encoding="utf-8"), argv[3], argv[4])
    except (EditError, OSError) as error:
        print(f"manifest-edit: {error}", file=sys.stderr)
        return 1
    manifest.write_text(edited, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
