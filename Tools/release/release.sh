#!/usr/bin/env bash
# Releases one package of the monorepo as a standalone repository.
#
#   Tools/release/release.sh PACKAGE VERSION
#
# 1. Checks that Packages/PACKAGE/CHANGELOG.md has a `## [VERSION]` heading and that the package's
#    files are committed; runs the package's tests (skip with SKIP_TESTS=1).
# 2. Splits the package's history out of the monorepo (git subtree split).
# 3. On top of it, rewrites Core's path dependency (`path: "../Core"`) to a versioned dependency on
#    Core's own released repository: `.package(url: "$RELEASE_BASE_URL/Core.git", from: "<Core version>")`,
#    where the Core version is the top release of Packages/Core/CHANGELOG.md (or CORE_VERSION).
# 4. Pushes the result to $RELEASE_DIR/PACKAGE.git (a bare repository, created when missing) as branch
#    `main` and tag `VERSION`, and tags the monorepo `PACKAGE/VERSION`.
#
# 3b. Core only, when CURL_APPLE_ARTIFACT_URL is set: the Apple branch of the released manifest
#    names the XCFramework by URL and SwiftPM checksum instead of the local path. The zip and its
#    checksum come from `make curl-apple` on a Mac (Packages/Core/Artifacts, or CURL_APPLE_ZIP);
#    the zip is copied to $RELEASE_DIR/artifacts/Core/VERSION/ for upload to that URL. The Linux
#    branch is left as is (a system library: no download at resolution).
#
# Environment: RELEASE_DIR (default: out/releases), RELEASE_BASE_URL (default: file://$RELEASE_DIR),
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

if [ -z "${SKIP_TESTS:-}" ]; then
  echo "release: testing $package"
  "${SWIFT:-swift}" test --package-path "$dir" >/tmp/release-test-$$.log 2>&1 || { tail -40 /tmp/release-test-$$.log; die "tests of $package failed"; }
fi

release_dir=${RELEASE_DIR:-$root/out/releases}
mkdir -p "$release_dir"
release_dir=$(cd "$release_dir" && pwd)
base_url=${RELEASE_BASE_URL:-file://$release_dir}
remote=$release_dir/$package.git
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
  sed -i -E "s#\.package\(name: \"Core\", path: \"\.\./Core\"\)#.package(url: \"$base_url/Core.git\", from: \"$core_version\")#" "$work/Package.swift"
  grep -q "$base_url/Core.git" "$work/Package.swift" || die "could not rewrite Core's path dependency"
  echo "release: Core dependency -> $base_url/Core.git from $core_version"
fi
if [ "$package" = Core ] && [ -n "${CURL_APPLE_ARTIFACT_URL:-}" ]; then
  zip=${CURL_APPLE_ZIP:-$root/Packages/Core/Artifacts/CTrackerLibcurl.xcframework.zip}
  [ -f "$zip" ] && [ -f "$zip.checksum" ] || die "no XCFramework zip and checksum at $zip (run make curl-apple on a Mac)"
  checksum=$(tr -d '[:space:]' < "$zip.checksum")
  [[ $checksum =~ ^[0-9a-f]{64}$ ]] || die "$zip.checksum is not a SwiftPM checksum"
  [[ $CURL_APPLE_ARTIFACT_URL =~ ^https:// ]] || die "CURL_APPLE_ARTIFACT_URL must be https"
  sed -i -E "s#path: \"Artifacts/CTrackerLibcurl\.xcframework\"#url: \"$CURL_APPLE_ARTIFACT_URL\",\n    checksum: \"$checksum\"#" "$work/Package.swift"
  grep -q "checksum: \"$checksum\"" "$work/Package.swift" || die "could not pin the XCFramework in Core's manifest"
  mkdir -p "$release_dir/artifacts/Core/$version"
  cp "$zip" "$zip.checksum" "$release_dir/artifacts/Core/$version/"
  echo "release: CTrackerLibcurl.xcframework -> $CURL_APPLE_ARTIFACT_URL (checksum $checksum)"
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
