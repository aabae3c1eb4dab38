#!/usr/bin/env bash
# Offline test of the per-package release (issue: per-package releases).
#
# In a temporary clone of this repository's HEAD: releases Core and PACKAGE (default Onboarding)
# into local bare repositories, then builds a small consumer package that depends on PACKAGE by
# file:// URL, and checks that it resolves Core transitively and contains no code of the
# Rocalytics client or Score.
set -euo pipefail
package=${1:-Onboarding}
product=${2:-OnboardingTracker}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test-release: FAIL: $*" >&2; exit 1; }

git clone -q "$root" "$tmp/mono"
export RELEASE_DIR=$tmp/releases SKIP_TESTS=1
core_version=$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' "$tmp/mono/Packages/Core/CHANGELOG.md" | sed -E 's/^## \[([^]]+)\].*/\1/')
pkg_version=$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' "$tmp/mono/Packages/$package/CHANGELOG.md" | sed -E 's/^## \[([^]]+)\].*/\1/')
(cd "$tmp/mono" && bash Tools/release/release.sh Core "$core_version" && bash Tools/release/release.sh "$package" "$pkg_version")

# A release of a version without a CHANGELOG heading is refused.
if (cd "$tmp/mono" && bash Tools/release/release.sh "$package" 99.0.0 >/dev/null 2>&1); then
  fail "a version without a CHANGELOG heading was released"
fi

# The released repository holds the package alone, with Core as a versioned URL dependency.
git clone -q "$RELEASE_DIR/$package.git" "$tmp/released"
[ -f "$tmp/released/Package.swift" ] || fail "no Package.swift at the root of the released $package"
[ ! -d "$tmp/released/Packages" ] || fail "the released $package contains the monorepo"
grep -q "url: \"file://$RELEASE_DIR/Core.git\", from: \"$core_version\"" "$tmp/released/Package.swift" || fail "Core dependency not rewritten"
[ "$(git -C "$tmp/released" tag)" = "$pkg_version" ] || fail "tag $pkg_version missing"

mkdir -p "$tmp/consumer/Sources/Consumer"
cat > "$tmp/consumer/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(url: "file://$RELEASE_DIR/$package.git", from: "$pkg_version")],
    targets: [.executableTarget(name: "Consumer", dependencies: [.product(name: "$product", package: "$package")])]
)
SWIFT
cat > "$tmp/consumer/Sources/Consumer/main.swift" <<SWIFT
import $product
import TrackerCore
print("consumer built with TrackerCore \(TrackerCoreVersion.current)")
SWIFT
(cd "$tmp/consumer" && swift build -q >"$tmp/build.log" 2>&1) || { tail -30 "$tmp/build.log"; fail "consumer did not build"; }
resolved=$(ls "$tmp/consumer/.build/checkouts" | tr '\n' ' ')
echo "test-release: consumer resolved: $resolved"
[ -d "$tmp/consumer/.build/checkouts/Core" ] || fail "Core not resolved transitively"
# Code of the client or Score: their packages, their module folders, or a file that imports or
# defines them (a name in a comment or a string, such as a log subsystem table, is not code).
if ls "$tmp/consumer/.build/checkouts" | grep -qxE 'RocalyticsClient|Score' \
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
