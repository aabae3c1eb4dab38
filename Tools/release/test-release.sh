#!/usr/bin/env bash
# Offline test of the per-package release (issue: per-package releases; issue 27, item 2).
#
# In a temporary clone of this repository's HEAD: releases Core and PACKAGE (default Onboarding)
# into local bare repositories, then builds a small consumer package that depends on PACKAGE by
# file:// URL, and checks that it resolves Core transitively and contains no code of the
# Rocalytics client or Score. Core's release is refused without an https XCFramework URL, a zip
# and its matching checksum; with them, its released manifest names CTrackerLibcurl by URL and
# checksum on Apple hosts (that branch is evaluated here with `swift package dump-package`) and
# keeps the system library on Linux, so the consumer still resolves and builds offline. The
# XCFramework zip is a stand-in: only a Mac builds the real one (make curl-apple).
set -euo pipefail
package=${1:-Onboarding}
product=${2:-OnboardingTracker}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test-release: FAIL: $*" >&2; exit 1; }

git clone -q "$root" "$tmp/mono"
# The released manifests name Core by an https URL (RELEASE_BASE_URL); git resolves it offline to
# the local bare repositories through url.<base>.insteadOf, for SwiftPM's clones too.
base_url=https://git.invalid/rocalytics
export RELEASE_DIR=$tmp/releases SKIP_TESTS=1 RELEASE_BASE_URL=$base_url
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="url.file://$RELEASE_DIR/.insteadOf" GIT_CONFIG_VALUE_0="$base_url/"
core_version=$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' "$tmp/mono/Packages/Core/CHANGELOG.md" | sed -E 's/^## \[([^]]+)\].*/\1/')
pkg_version=$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' "$tmp/mono/Packages/$package/CHANGELOG.md" | sed -E 's/^## \[([^]]+)\].*/\1/')

# Core's release refuses to run without a URL, zip and checksum that agree.
artifacts=$tmp/mono/Packages/Core/Artifacts
zip=$artifacts/CTrackerLibcurl.xcframework.zip
artifact_url="https://downloads.invalid/rocalytics/Core/$core_version/CTrackerLibcurl.xcframework.zip"
refused() { # description, the reason the refusal must give (a grep pattern), then environment assignments
  local what=$1 reason=$2; shift 2
  if (cd "$tmp/mono" && env "$@" bash Tools/release/release.sh Core "$core_version" >"$tmp/refused.log" 2>&1); then
    fail "Core was released $what"
  fi
  grep -q "^release: .*$reason" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail "refusing a release $what did not say '$reason'"; }
}
refused "without CURL_APPLE_ARTIFACT_URL" "needs CURL_APPLE_ARTIFACT_URL" CURL_APPLE_ARTIFACT_URL=
refused "without the XCFramework zip" "no XCFramework zip" CURL_APPLE_ARTIFACT_URL="$artifact_url"
mkdir -p "$artifacts"
printf 'stand-in for CTrackerLibcurl.xcframework.zip\n' > "$zip"
checksum=$(swift package compute-checksum "$zip")
echo "0000000000000000000000000000000000000000000000000000000000000000" > "$zip.checksum"
refused "with a checksum that is not the zip's" "is not the checksum of the zip" CURL_APPLE_ARTIFACT_URL="$artifact_url"
echo "$checksum" > "$zip.checksum"
refused "with a plain-http XCFramework URL" "must be an https URL of a .zip" \
  CURL_APPLE_ARTIFACT_URL="http://downloads.invalid/CTrackerLibcurl.xcframework.zip"
refused "with an https XCFramework URL that is not a .zip" "must be an https URL of a .zip" \
  CURL_APPLE_ARTIFACT_URL="https://downloads.invalid/CTrackerLibcurl.xcframework.tar.gz"
refused "with an https XCFramework URL whose path only contains .zip" "must be an https URL of a .zip" \
  CURL_APPLE_ARTIFACT_URL="https://downloads.invalid/CTrackerLibcurl.zip/download"
[ -z "$(git -C "$tmp/mono" tag -l 'Core/*')" ] || fail "a refused release left a tag"

# A package that depends on Core is refused without an https RELEASE_BASE_URL (its released manifest
# would name the releaser's disk), before anything is tagged.
refused_dependent() { # description, then environment assignments for the release
  local what=$1; shift
  if (cd "$tmp/mono" && env "$@" bash Tools/release/release.sh "$package" "$pkg_version" >"$tmp/refused.log" 2>&1); then
    fail "$package was released $what"
  fi
  grep -q "^release: RELEASE_BASE_URL must be the https URL" "$tmp/refused.log" \
    || { cat "$tmp/refused.log"; fail "refusing a release of $package $what did not name RELEASE_BASE_URL"; }
}
refused_dependent "without RELEASE_BASE_URL" RELEASE_BASE_URL=
refused_dependent "with a file:// RELEASE_BASE_URL" RELEASE_BASE_URL="file://$RELEASE_DIR"
refused_dependent "with a plain-http RELEASE_BASE_URL" RELEASE_BASE_URL="http://git.invalid/rocalytics"
[ -z "$(git -C "$tmp/mono" tag -l "$package/*")" ] || fail "a refused release of $package left a tag"

(cd "$tmp/mono" && CURL_APPLE_ARTIFACT_URL="$artifact_url" bash Tools/release/release.sh Core "$core_version" \
  && bash Tools/release/release.sh "$package" "$pkg_version")

# The released Core: URL and checksum on Apple hosts, the system library on Linux.
# Released under distinctive names (package identities), not `core` (issue 38, item 9).
[ ! -e "$RELEASE_DIR/Core.git" ] || fail "Core was released as Core.git (identity core)"
git clone -q "$RELEASE_DIR/rocalytics-core.git" "$tmp/released-core"
core_manifest=$tmp/released-core/Package.swift
grep -q "url: \"$artifact_url\"," "$core_manifest" || fail "the released Core does not name the XCFramework by URL"
grep -q "checksum: \"$checksum\"" "$core_manifest" || fail "the released Core does not pin the XCFramework's checksum"
! grep -q 'path: "Artifacts/' "$core_manifest" || fail "the released Core still names the local XCFramework"
[ -f "$RELEASE_DIR/artifacts/Core/$core_version/CTrackerLibcurl.xcframework.zip" ] || fail "the zip to publish is missing"
# The Apple-host branch, evaluated here (a manifest is evaluated on the build host): flip the
# host test and read the manifest as SwiftPM sees it.
cp -R "$tmp/released-core" "$tmp/apple-core"
sed -i 's/^#if os(Linux)$/#if !os(Linux)/' "$tmp/apple-core/Package.swift"
(cd "$tmp/apple-core" && swift package dump-package >"$tmp/apple-core.json" 2>"$tmp/apple-core.err") \
  || { cat "$tmp/apple-core.err"; fail "the released Core's Apple manifest does not load"; }
python3 - "$tmp/apple-core.json" "$artifact_url" "$checksum" <<'PY' || fail "the released Core's Apple manifest has no URL binary target with that checksum"
import json, sys
manifest, url, checksum = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
target = next(t for t in manifest["targets"] if t["name"] == "CTrackerLibcurl")
assert target["type"] == "binary" and target.get("url") == url and target.get("checksum") == checksum, target
assert not target.get("path"), target
PY
(cd "$tmp/released-core" && swift package dump-package | python3 -c 'import json,sys; t=[t for t in json.load(sys.stdin)["targets"] if t["name"]=="CTrackerLibcurl"][0]; assert t["type"]=="system", t') \
  || fail "the released Core's Linux manifest is not the system library"

# A release of a version without a CHANGELOG heading is refused.
if (cd "$tmp/mono" && bash Tools/release/release.sh "$package" 99.0.0 >/dev/null 2>&1); then
  fail "a version without a CHANGELOG heading was released"
fi

# The released repository holds the package alone, with Core as a versioned URL dependency.
released=$(python3 "$root/Tools/release/manifest-edit.py" released-name "$package")
git clone -q "$RELEASE_DIR/$released.git" "$tmp/released"
[ -f "$tmp/released/Package.swift" ] || fail "no Package.swift at the root of the released $package"
[ ! -d "$tmp/released/Packages" ] || fail "the released $package contains the monorepo"
grep -qF ".package(url: \"$base_url/rocalytics-core.git\", from: \"$core_version\")" "$tmp/released/Package.swift" \
  || fail "Core dependency not rewritten to $base_url/rocalytics-core.git"
grep -qF 'package: "rocalytics-core"' "$tmp/released/Package.swift" || fail "the products do not name Core by its identity"
! grep -qF 'package: "Core"' "$tmp/released/Package.swift" || fail "a product still names the package Core"
! grep -q 'file://' "$tmp/released/Package.swift" || fail "the released $package names a file:// URL"
[ "$(git -C "$tmp/released" tag)" = "$pkg_version" ] || fail "tag $pkg_version missing"

mkdir -p "$tmp/consumer/Sources/Consumer"
cat > "$tmp/consumer/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(url: "file://$RELEASE_DIR/$released.git", from: "$pkg_version")],
    targets: [.executableTarget(name: "Consumer", dependencies: [.product(name: "$product", package: "$released")])]
)
SWIFT
cat > "$tmp/consumer/Sources/Consumer/main.swift" <<SWIFT
import $product
import TrackerCore
print("consumer built with TrackerCore \(TrackerCoreVersion.current)")
SWIFT
# SwiftPM's repository cache and its trust-on-first-use fingerprints are per URL and version: the
# fixed https URLs above name new content on every run, so this run keeps its own (and leaves the
# user's untouched).
(cd "$tmp/consumer" && swift build -q --cache-path "$tmp/swiftpm-cache" --security-path "$tmp/swiftpm-security" \
  >"$tmp/build.log" 2>&1) || { tail -30 "$tmp/build.log"; fail "consumer did not build"; }
resolved=$(find "$tmp/consumer/.build/checkouts" -mindepth 1 -maxdepth 1 -printf '%f ')
echo "test-release: consumer resolved: $resolved"
[ -d "$tmp/consumer/.build/checkouts/rocalytics-core" ] || fail "Core not resolved transitively (as rocalytics-core)"
# Code of the client or Score: their packages, their module folders, or a file that imports or
# defines them (a name in a comment or a string, such as a log subsystem table, is not code).
if find "$tmp/consumer/.build/checkouts" -mindepth 1 -maxdepth 1 -printf '%f\n' | grep -qixE 'RocalyticsClient|Score|rocalytics-client|rocalytics-score' \
   || find "$tmp/consumer/.build/checkouts" -type d \( -name RocalyticsClient -o -name ScoreTracker \) | grep -q . \
   || grep -rlE '^[[:space:]]*(@testable[[:space:]]+)?import[[:space:]]+(RocalyticsClient|ScoreTracker)\b|(class|struct|enum)[[:space:]]+(RocalyticsClient|ScoreClient)\b' \
        "$tmp/consumer/.build/checkouts" --include='*.swift' >/dev/null; then
  fail "the consumer's dependencies contain code of the client or Score"
fi
"$tmp/consumer/.build/debug/Consumer"

# A later release extends the released history (the earlier tag stays an ancestor).
(cd "$tmp/mono" && sed -i "s/^## \[Unreleased\]/## [Unreleased]\n\n## [9.9.9] - 2026-12-01/" "Packages/$package/CHANGELOG.md" \
  && git -c user.name=t -c user.email=t@localhost commit -qam "next version" && bash Tools/release/release.sh "$package" 9.9.9)
git -C "$tmp/released" fetch -q --tags origin
git -C "$tmp/released" merge-base --is-ancestor "$pkg_version" 9.9.9 || fail "the second release does not extend the first"
echo "test-release: 1 passed, 0 failed"
