#!/usr/bin/env bash
# Releases one package of the monorepo as a standalone repository.
#
#   Tools/release/release.sh PACKAGE VERSION
#
# 1. Checks that Packages/PACKAGE/CHANGELOG.md has a `## [VERSION]` heading and that the package's
#    files are committed; runs the package's tests (skip with SKIP_TESTS=1).
# 2. Splits the package's history out of the monorepo (git subtree split).
# 3. On top of it, rewrites Core's path dependency (`path: "../Core"`) to a versioned dependency on
#    Core's own released repository: `.package(url: "$RELEASE_BASE_URL/rocalytics-core.git", from:
#    "<Core version>")`, where the Core version is the top release of Packages/Core/CHANGELOG.md (or
#    CORE_VERSION), and the products' `package: "Core"` to its identity, `rocalytics-core`.
# 4. Pushes the result to $RELEASE_DIR/<released name>.git (a bare repository, created when missing)
#    as branch `main` and tag `VERSION`, and tags the monorepo `PACKAGE/VERSION`. Released names
#    (manifest-edit.py RELEASED_NAMES) are distinctive package identities: rocalytics-core,
#    rocalytics-onboarding, rocalytics-paywall, rocalytics-client, rocalytics-score.
#
# 3b. Core only, always: the Apple branch of the released manifest names the XCFramework by URL
#    and SwiftPM checksum, `.binaryTarget(name: "CTrackerLibcurl", url: ..., checksum: ...)`, instead
#    of the git-ignored local path no consumer has. Without CURL_APPLE_ARTIFACT_URL (an https URL
#    of a .zip: where the zip will be published), the zip and its checksum from `make curl-apple`
#    on a Mac (Packages/Core/Artifacts, or CURL_APPLE_ZIP), or when the checksum file is not the
#    zip's SwiftPM checksum, the release refuses to run (before anything is tested, split or
#    tagged). The zip is copied to $RELEASE_DIR/artifacts/Core/VERSION/ for upload to that URL.
#    The Linux branch is left as is (a system library: no download at resolution, offline).
#
# The manifest edits of 3 and 3b are made by manifest-edit.py (the same on a Mac's BSD tools as on
# Linux; tested by test-manifest-edit.py). RELEASE_BASE_URL, where the released repositories are
# published, is required for a package that depends on Core and must be https: a released manifest
# never names the releaser's disk (checked before anything is tested, split or tagged).
#
# Environment: RELEASE_DIR (default: out/releases), RELEASE_BASE_URL (https, no default),
# CORE_VERSION, SKIP_TESTS, SWIFT (default: swift), CURL_APPLE_ARTIFACT_URL, CURL_APPLE_ZIP.
set -euo pipefail

die() { echo "release: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: release.sh PACKAGE VERSION"
package=$1
version=$2
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION must be x.y.z, got '$version'"

root=$(git rev-parse --show-toplevel)
cd "$root"
dir=Packages/$package
[ -f "$dir/Package.swift" ] || die "no package at $dir"
grep -q "^## \[$version\]" "$dir/CHANGELOG.md" || die "$dir/CHANGELOG.md has no '## [$version]' heading"
[ -z "$(git status --porcelain -- "$dir")" ] || die "$dir has uncommitted changes"
if git rev-parse -q --verify "refs/tags/$package/$version" >/dev/null; then
  die "tag $package/$version exists already"
fi

# A package that depends on Core names Core's released repository under RELEASE_BASE_URL: https only.
base_url=${RELEASE_BASE_URL:-}
base_url=${base_url%/}
if grep -q 'path: "../Core"' "$dir/Package.swift"; then
  [[ $base_url =~ ^https://[^[:space:]\"]+$ ]] \
    || die "RELEASE_BASE_URL must be the https URL the released repositories are published under (Core at \$RELEASE_BASE_URL/rocalytics-core.git), got '$base_url'"
fi

# Core: the XCFramework's URL, zip and checksum are checked before anything else happens.
if [ "$package" = Core ]; then
  url=${CURL_APPLE_ARTIFACT_URL:-}
  [ -n "$url" ] || die "releasing Core needs CURL_APPLE_ARTIFACT_URL, the https URL the XCFramework zip will be published at: a released Core names CTrackerLibcurl by URL and checksum, never by a local path"
  [[ $url =~ ^https://[^[:space:]\"]+\.zip$ ]] || die "CURL_APPLE_ARTIFACT_URL must be an https URL of a .zip, got '$url'"
  zip=${CURL_APPLE_ZIP:-$root/Packages/Core/Artifacts/CTrackerLibcurl.xcframework.zip}
  if [ ! -f "$zip" ] || [ ! -f "$zip.checksum" ]; then
    die "no XCFramework zip and checksum at $zip (run make curl-apple on a Mac)"
  fi
  checksum=$(tr -d '[:space:]' < "$zip.checksum")
  [[ $checksum =~ ^[0-9a-f]{64}$ ]] || die "$zip.checksum is not a SwiftPM checksum"
  if command -v "${SWIFT:-swift}" >/dev/null 2>&1; then
    actual=$("${SWIFT:-swift}" package compute-checksum "$zip")
  else
    actual=$(shasum -a 256 "$zip" 2>/dev/null || sha256sum "$zip")
    actual=${actual%% *}
  fi
  [ "$actual" = "$checksum" ] || die "$zip.checksum ($checksum) is not the checksum of the zip ($actual)"
  grep -q 'path: "Artifacts/CTrackerLibcurl.xcframework"' "$dir/Package.swift" \
    || die "$dir/Package.swift no longer names Artifacts/CTrackerLibcurl.xcframework: update release.sh"
fi

if [ -z "${SKIP_TESTS:-}" ]; then
  echo "release: testing $package"
  "${SWIFT:-swift}" test --package-path "$dir" >/tmp/release-test-$$.log 2>&1 || { tail -40 /tmp/release-test-$$.log; die "tests of $package failed"; }
fi

release_dir=${RELEASE_DIR:-$root/out/releases}
mkdir -p "$release_dir"
release_dir=$(cd "$release_dir" && pwd)
released=$(python3 "$root/Tools/release/manifest-edit.py" released-name "$package") || die "no released name for $package"
core_repo=$(python3 "$root/Tools/release/manifest-edit.py" released-name Core)
remote=$release_dir/$released.git
if [ ! -d "$remote" ]; then
  git init -q --bare "$remote"
  git --git-dir="$remote" symbolic-ref HEAD refs/heads/main
fi

echo "release: splitting $dir"
split=$(git subtree split -q --prefix="$dir" HEAD)

work=$(mktemp -d)
trap 'git worktree remove --force "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work" "$split"

if grep -q 'path: "../Core"' "$work/Package.swift"; then
  core_version=${CORE_VERSION:-$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' Packages/Core/CHANGELOG.md | sed -E 's/^## \[([^]]+)\].*/\1/')}
  [ -n "$core_version" ] || die "cannot tell Core's version"
  python3 "$root/Tools/release/manifest-edit.py" core-dependency "$work/Package.swift" "$base_url/$core_repo.git" "$core_version" \
    || die "could not rewrite Core's path dependency"
  grep -qF "$base_url/$core_repo.git" "$work/Package.swift" || die "could not rewrite Core's path dependency"
  echo "release: Core dependency -> $base_url/$core_repo.git from $core_version"
fi
if [ "$package" = Core ]; then
  python3 "$root/Tools/release/manifest-edit.py" xcframework "$work/Package.swift" "$url" "$checksum" \
    || die "could not pin the XCFramework in Core's manifest"
  if ! grep -q "url: \"$url\"," "$work/Package.swift" || ! grep -q "checksum: \"$checksum\"" "$work/Package.swift" \
    || grep -q 'path: "Artifacts/' "$work/Package.swift"; then
    die "could not pin the XCFramework in Core's manifest"
  fi
  mkdir -p "$release_dir/artifacts/Core/$version"
  cp "$zip" "$zip.checksum" "$release_dir/artifacts/Core/$version/"
  echo "release: CTrackerLibcurl.xcframework -> $url (checksum $checksum)"
fi
git -C "$work" add -A
tree=$(git -C "$work" write-tree)

parents=(-p "$split")
if prev=$(git --git-dir="$remote" rev-parse -q --verify refs/heads/main 2>/dev/null); then
  git fetch -q "$remote" "refs/heads/main"
  parents+=(-p "$prev")
fi
commit=$(GIT_AUTHOR_NAME="release" GIT_AUTHOR_EMAIL="release@localhost" GIT_COMMITTER_NAME="release" \
  GIT_COMMITTER_EMAIL="release@localhost" git commit-tree "$tree" "${parents[@]}" -m "Release $package $version")
git -c user.name=release -c user.email=release@localhost tag -a "$package/$version" "$commit" -m "$package $version"
git push -q "$remote" "$commit:refs/heads/main" "refs/tags/$package/$version:refs/tags/$version"
echo "release: $package $version -> $remote (tag $version)"
