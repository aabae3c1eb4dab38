#!/usr/bin/env bash
# Linux tests of the curl-apple build (issue 27, item 3), run by `make check-apple`: what can be
# checked without a Mac. The pins' policy (versions.env), the slices and XCFramework variants (Mac
# Catalyst included), the required-reason symbol check (curl's clock is clock_gettime on these
# floors), the Apple libcurl floor against the pinned curl, build.sh refusing an unpinned
# tarball before anything else, and the scripts' lint (bash -n, shellcheck).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "test-build: FAIL: $*" >&2; }
check() { # description, command...
  local what=$1; shift
  if "$@"; then ok; else bad "$what"; fi
}
refuses() { # description, command...
  local what=$1; shift
  if "$@" 2>/dev/null; then bad "$what"; else ok; fi
}

# CA1: the pinned sources pass the policy; each way of leaving one unpinned is refused.
pins() ( # assignments...: versions.env with them applied, then the check
  # shellcheck source=versions.env
  . "$here/versions.env"
  for a in "$@"; do eval "$a"; done
  curl_apple_check_pins
)
check "CA1 versions.env is pinned" pins
refuses "CA1 no SHA-256" pins "CURL_SHA256="
refuses "CA1 a short SHA-256" pins "OPENSSL_SHA256=603f5602e2eef00d77fbd429d34dcd58"
refuses "CA1 an uppercase SHA-256" pins "NGHTTP2_SHA256=E05CB1388EACA3830ADED4CCF20044B6E1AC1A61411DCCA11B0437C4285C8BC2"
refuses "CA1 a plain-http URL" pins "CURL_URL=http://curl.se/download/curl-8.22.0.tar.xz"
refuses "CA1 a URL of another version" pins "CURL_VERSION=8.21.0"
refuses "CA1 nghttp2 without the CVE-2026-27135 fix" pins "NGHTTP2_VERSION=1.68.0" \
  "NGHTTP2_URL=https://github.com/nghttp2/nghttp2/releases/download/v1.68.0/nghttp2-1.68.0.tar.xz"
check "CA1 nghttp2 1.68.1 has the fix" pins "NGHTTP2_VERSION=1.68.1" \
  "NGHTTP2_URL=https://github.com/nghttp2/nghttp2/releases/download/v1.68.1/nghttp2-1.68.1.tar.xz"
refuses "CA1 OpenSSL outside the 3.5 LTS series" pins "OPENSSL_VERSION=3.6.3" \
  "OPENSSL_URL=https://github.com/openssl/openssl/releases/download/openssl-3.6.3/openssl-3.6.3.tar.gz"
check "CA1 version order" curl_apple_version_at_least 1.70.0 1.68.1
refuses "CA1 version order (older)" curl_apple_version_at_least 1.68.0 1.68.1

# CA2: build.sh refuses an unpinned tarball before anything else, also here; pinned, it gets as
# far as asking for a Mac.
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp "$here"/*.sh "$here"/versions.env "$here"/PrivacyInfo.xcprivacy "$copy/"
sed -i 's/^NGHTTP2_SHA256=.*/NGHTTP2_SHA256=/' "$copy/versions.env"
if out=$(bash "$copy/build.sh" --out "$copy/out" 2>&1); then bad "CA2 build.sh ran with an unpinned tarball"; else
  check "CA2 the refusal names the pin" grep -q "NGHTTP2_SHA256 is not a published SHA-256" <<<"$out"
fi
if [ "$(uname -s)" != Darwin ]; then
  out=$(bash "$here/build.sh" --out "$copy/out" 2>&1 || true)
  check "CA2 pinned, build.sh only asks for a Mac here" grep -q "needs macOS with Xcode" <<<"$out"
fi

# CA3: the symbol check. curl on iOS 15 and later calls clock_gettime, not mach_absolute_time;
# with stat and fstat that is exactly what PrivacyInfo.xcprivacy declares.
declared=$(curl_apple_categories_declared "$here/PrivacyInfo.xcprivacy" | tr '\n' ' ')
check "CA3 the manifest declares FileTimestamp and SystemBootTime" test "$declared" = "FileTimestamp SystemBootTime "
curl_ios=$'                 U _SecTrustEvaluateWithError\n                 U _clock_gettime\n                 U _fstat\n                 U _stat\n                 U _gettimeofday'
check "CA3 curl's clock_gettime counts as system boot time" \
  test "$(curl_apple_categories_used <<<"$curl_ios" | tr '\n' ' ')" = "$declared"
check "CA3 the mach_absolute_time fallback too" \
  test "$(curl_apple_categories_used <<<$'U _mach_absolute_time\nU _fstat' | tr '\n' ' ')" = "$declared"
check "CA3 x86_64 macOS symbol suffixes" \
  test "$(curl_apple_categories_used <<<$'U _stat$INODE64\nU _clock_gettime_nsec_np' | tr '\n' ' ')" = "$declared"
check "CA3 disk space is told apart" test "$(curl_apple_categories_used <<<'U _statfs' | tr '\n' ' ')" = "DiskSpace "
check "CA3 no required-reason symbol, no category" test -z "$(curl_apple_categories_used <<<'U _malloc')"

# CA4: every slice is in exactly one variant; Mac Catalyst is there (macOS SDK, -macabi, iOS floor).
# shellcheck source=versions.env
. "$here/versions.env"
slices=$(curl_apple_slices | awk '{print $1}' | sort)
in_variants=$(curl_apple_variants | awk '{for (i = 2; i <= NF; i++) print $i}' | sort)
check "CA4 every slice is in exactly one variant" test "$slices" = "$in_variants"
check "CA4 a Mac Catalyst variant" grep -qx "maccatalyst maccatalyst-arm64 maccatalyst-x86_64" <<<"$(curl_apple_variants)"
check "CA4 Mac Catalyst slices build iOS $IOS_MIN against the macOS SDK" \
  test "$(curl_apple_slices | grep '^maccatalyst-' | awk '{print $2, $4}' | tr '\n' ' ')" \
  = "macosx arm64-apple-ios$IOS_MIN-macabi macosx x86_64-apple-ios$IOS_MIN-macabi "
check "CA4 eight variants" test "$(curl_apple_variants | wc -l)" -eq 8

# CA5: TrackerCore's Apple libcurl floor is the curl version the build pins.
hex=$(grep -A1 'public static let apple = LibcurlRequirements(' "$root/Packages/Core/Sources/TrackerCore/Transport/LibcurlCheck.swift" \
  | grep -oE 'minimumVersion: 0x[0-9A-Fa-f_]+' | sed 's/minimumVersion: 0x//; s/_//g')
IFS=. read -r major minor patch <<<"$CURL_VERSION"
check "CA5 LibcurlRequirements.apple is curl $CURL_VERSION" test "$hex" = "$(printf '%02x%02x%02x' "$major" "$minor" "$patch")"

# CA7 (issue 38, item 4): the Apple branch of Core's manifest (evaluated here with the host test
# flipped) declares, as linkerSettings of the target that calls curl, every framework and library
# the XCFramework's module map links, and `z` unless build.sh configures curl --without-zlib; the
# module map's `link` lines alone reach the linker only where a Swift file imports CTrackerLibcurl.
apple_core=$(mktemp -d)
trap 'rm -rf "$copy" "$apple_core"' EXIT
links_declared() {
  tar -C "$root/Packages/Core" --exclude='.build*' -cf - . | tar -C "$apple_core" -xf -
  python3 - "$apple_core/Package.swift" <<'PY'
import pathlib, sys
p = pathlib.Path(sys.argv[1])
text = p.read_text(encoding="utf-8")
assert text.count("#if os(Linux)\n") == 1, "Core's manifest no longer has one `#if os(Linux)`"
p.write_text(text.replace("#if os(Linux)\n", "#if !os(Linux)\n"), encoding="utf-8")
PY
  (cd "$apple_core" && swift package dump-package >"$apple_core/dump.json" 2>"$apple_core/dump.err") \
    || { cat "$apple_core/dump.err" >&2; return 1; }
  python3 - "$apple_core/dump.json" "$here/module.modulemap" "$here/build.sh" <<'PY'
import json, pathlib, re, sys
manifest = json.loads(pathlib.Path(sys.argv[1]).read_text())
modulemap = re.sub(r"//[^\n]*", "", pathlib.Path(sys.argv[2]).read_text())
build = pathlib.Path(sys.argv[3]).read_text()
need = {("framework", n) for n in re.findall(r'link\s+framework\s+"([^"]+)"', modulemap)}
need |= {("library", n) for n in re.findall(r'link\s+"([^"]+)"', modulemap)}
if "--without-zlib" not in build:
    need.add(("library", "z"))
assert ("framework", "Security") in need, "the module map no longer links Security: update CA7"
shim = next(t for t in manifest["targets"] if t["name"] == "CTrackerCurlShim")
have = set()
for s in shim.get("settings", []):
    if s.get("tool") != "linker":
        continue
    kind = s.get("kind", {})
    for key, what in (("linkedFramework", "framework"), ("linkedLibrary", "library")):
        if key in kind:
            have.add((what, kind[key]["_0"]))
missing = sorted(need - have)
if missing:
    sys.exit("CTrackerCurlShim's Apple linkerSettings lack " + ", ".join(f"{k} {n}" for k, n in missing))
PY
}
check "CA7 Core's Apple manifest links what the module map and the build need" links_declared

# CA8 (issue 38, item 9): no bitcode flags (obsolete since Xcode 14), and OpenSSL's compiled-in
# OPENSSLDIR is a fixed absolute path outside the build's temporary directory (reproducible, and
# no path another user could create).
build_text=$(grep -v '^[[:space:]]*#' "$here/build.sh")
refuses "CA8 no -fembed-bitcode flag" grep -q -- '-fembed-bitcode' <<<"$build_text"
check "CA8 a fixed --openssldir" grep -qE -- '--openssldir=/var/empty/[A-Za-z0-9._-]+([[:space:]]|$)' <<<"$build_text"

# CA6: the scripts parse and are shellcheck-clean.
scripts=("$here/build.sh" "$here/lib.sh" "$here/inputs.sh" "$here/test-build.sh" "$root/Tools/release/release.sh" "$root/Tools/release/test-release.sh"
  "$root/Tools/scripts/typecheck-example.sh")
for s in "${scripts[@]}"; do check "CA6 bash -n $(basename "$s")" bash -n "$s"; done
if command -v shellcheck >/dev/null; then
  lint() { (cd "$here" && shellcheck -x "$@"); }
  check "CA6 shellcheck" lint "${scripts[@]}"
else
  bad "CA6 shellcheck is not installed (make deps installs it)"
fi

echo "test-build: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
