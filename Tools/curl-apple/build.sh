#!/usr/bin/env bash
# Builds CTrackerLibcurl.xcframework: static curl (HTTP and HTTPS only) with OpenSSL 3, Apple
# SecTrust peer verification and nghttp2, for iOS device, iOS Simulator, Mac Catalyst, macOS, tvOS
# (device and simulator) and visionOS (device and simulator). Runs on a Mac with Xcode
# (`make curl-apple`). The decisions that need no Mac live in lib.sh, tested on Linux by
# test-build.sh (`make check-apple`).
#
#   Tools/curl-apple/build.sh [--out DIR]     (default: Packages/Core/Artifacts)
#
# - Sources are the tarballs pinned in versions.env, verified by SHA-256 before they are unpacked
#   (a mismatch stops the build; a source without a published SHA-256 stops it before anything). Downloads are cached in $CURL_APPLE_CACHE (default
#   ~/Library/Caches/tracker-curl-apple).
# - Reproducible: fixed flags, SOURCE_DATE_EPOCH from versions.env's last commit, ZERO_AR_DATE
#   for archive members, build paths mapped away (-ffile-prefix-map), sorted inputs.
# - Every slice's merged static library's undefined symbols are checked against
#   PrivacyInfo.xcprivacy's required-reason categories (both ways) before the XCFramework is
#   assembled.
# - Signing: with CURL_APPLE_SIGN_IDENTITY set, the XCFramework is signed (codesign --timestamp);
#   RELEASE=1 refuses to finish unsigned. A zip and its SwiftPM checksum are written next to it
#   for the release tool.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/Packages/Core/Artifacts"
[ "${1:-}" = "--out" ] && { out=$2; shift 2; }
die() { echo "curl-apple: $*" >&2; exit 1; }
words() { tr '\n' ' ' <<<"$1" | sed 's/ $//'; }

# shellcheck source=versions.env
. "$here/versions.env"
# shellcheck source=lib.sh
. "$here/lib.sh"
curl_apple_check_pins || die "versions.env: every source needs a version, an https URL and its published SHA-256"

[ "$(uname -s)" = Darwin ] || die "needs macOS with Xcode (xcrun, lipo, libtool, xcodebuild)"
command -v xcrun >/dev/null || die "xcrun not found: install Xcode and run xcode-select"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct -- Tools/curl-apple 2>/dev/null || echo 1767225600)}
export ZERO_AR_DATE=1
cache=${CURL_APPLE_CACHE:-$HOME/Library/Caches/tracker-curl-apple}
work=$(mktemp -d "${TMPDIR:-/tmp}/curl-apple.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache" "$out"
jobs=$(sysctl -n hw.ncpu)

fetch() { # name url sha256
  local file
  file="$cache/$(basename "$2")"
  if [ ! -f "$file" ] || ! echo "$3  $file" | shasum -a 256 -c - >/dev/null 2>&1; then
    echo "curl-apple: downloading $2"
    curl --fail --location --proto '=https' --tlsv1.2 --silent --show-error -o "$file.part" "$2"
    mv "$file.part" "$file"
  fi
  echo "$3  $file" | shasum -a 256 -c - >/dev/null || die "$(basename "$2"): SHA-256 mismatch (expected $3)"
  mkdir -p "$work/src/$1"
  tar -xf "$file" -C "$work/src/$1" --strip-components=1
}
fetch curl "$CURL_URL" "$CURL_SHA256"
fetch openssl "$OPENSSL_URL" "$OPENSSL_SHA256"
fetch nghttp2 "$NGHTTP2_URL" "$NGHTTP2_SHA256"

# slice: name sdk arch target-triple (lib.sh)
slices=()
while read -r line; do slices+=("$line"); done < <(curl_apple_slices)

build_slice() { # name sdk arch triple
  local name=$1 sdk=$2 arch=$3 triple=$4
  local sysroot prefix b cc cflags host
  sysroot=$(xcrun --sdk "$sdk" --show-sdk-path)
  prefix="$work/prefix/$name"
  b="$work/build/$name"
  mkdir -p "$prefix" "$b"
  cc="$(xcrun --sdk "$sdk" --find clang)"
  # No -fembed-bitcode(-marker): Xcode 14 deprecated bitcode and the App Store no longer takes it.
  cflags="-target $triple -isysroot $sysroot -Os -ffile-prefix-map=$work=. -fvisibility=hidden"
  host=$([ "$arch" = arm64 ] && echo aarch64-apple-darwin || echo x86_64-apple-darwin)
  echo "curl-apple: building $name ($triple)"

  # OpenSSL 3: static, no apps, tests, engines or async (tvOS/visionOS forbid the context APIs).
  # OPENSSLDIR (where OpenSSL looks for openssl.cnf and its default certificate store) is compiled
  # in: by default it is under the prefix, this build's random temporary directory, which made the
  # libraries differ per build and named a path another local user could create on a Mac. A fixed
  # directory that does not exist and cannot be created (/var/empty is root's, read-only): nothing
  # is read from it; trust comes from SecTrust.
  cp -R "$work/src/openssl" "$b/openssl"
  (cd "$b/openssl" && CC="$cc" CFLAGS="$cflags" ./Configure "darwin64-$arch-cc" \
      no-shared no-tests no-apps no-docs no-engine no-async no-ui-console no-dso \
      --prefix="$prefix" --libdir=lib --openssldir=/var/empty/rocalytics-openssl >"$b/openssl.log" 2>&1 \
    && make -j"$jobs" build_libs >>"$b/openssl.log" 2>&1 \
    && make install_dev >>"$b/openssl.log" 2>&1) || { tail -30 "$b/openssl.log"; die "OpenSSL failed for $name"; }

  cp -R "$work/src/nghttp2" "$b/nghttp2"
  (cd "$b/nghttp2" && CC="$cc" CFLAGS="$cflags" ./configure --host="$host" --prefix="$prefix" \
      --enable-lib-only --disable-shared --enable-static >"$b/nghttp2.log" 2>&1 \
    && make -j"$jobs" -C lib install >>"$b/nghttp2.log" 2>&1) || { tail -30 "$b/nghttp2.log"; die "nghttp2 failed for $name"; }

  # curl: HTTP and HTTPS only; trust from Apple SecTrust (no CA bundle or path compiled in).
  cp -R "$work/src/curl" "$b/curl"
  (cd "$b/curl" && CC="$cc" CFLAGS="$cflags" LDFLAGS="-target $triple -isysroot $sysroot" \
      PKG_CONFIG_PATH="$prefix/lib/pkgconfig" ./configure --host="$host" --prefix="$prefix" \
      --disable-shared --enable-static --with-openssl="$prefix" --with-apple-sectrust \
      --with-nghttp2="$prefix" --without-ca-bundle --without-ca-path --without-ca-fallback \
      --enable-http --disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp \
      --disable-dict --disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb \
      --disable-smtp --disable-gopher --disable-mqtt --disable-ipfs --disable-websockets \
      --disable-manual --disable-docs --disable-netrc --disable-cookies --disable-ntlm \
      --without-libpsl --without-libidn2 --without-zlib --without-brotli --without-zstd \
      --without-libssh2 --without-librtmp --without-nghttp3 --without-ngtcp2 \
      >"$b/curl.log" 2>&1 \
    && make -j"$jobs" -C lib >>"$b/curl.log" 2>&1 \
    && make -C lib install >>"$b/curl.log" 2>&1 && make -C include install >>"$b/curl.log" 2>&1) \
    || { tail -30 "$b/curl.log"; die "curl failed for $name"; }

  libtool -static -no_warning_for_no_symbols -o "$prefix/libCTrackerLibcurl.a" \
    "$prefix/lib/libcurl.a" "$prefix/lib/libnghttp2.a" "$prefix/lib/libssl.a" "$prefix/lib/libcrypto.a"
}

for s in "${slices[@]}"; do
  # shellcheck disable=SC2086
  build_slice $s
done

# Required-reason symbols (Apple's list, lib.sh) each slice's libraries call, against our privacy
# manifest: every slice's categories must be declared, and every declared one used by some slice.
declared=$(curl_apple_categories_declared "$here/PrivacyInfo.xcprivacy")
all_used=""
for s in "${slices[@]}"; do
  name=${s%% *}
  used=$(nm -u "$work/prefix/$name/libCTrackerLibcurl.a" 2>/dev/null | curl_apple_categories_used)
  for category in $used; do
    grep -qx "$category" <<<"$declared" \
      || die "privacy manifest mismatch: $name uses $category, PrivacyInfo.xcprivacy declares [$(words "$declared")]"
  done
  all_used=$(printf '%s\n%s\n' "$all_used" "$used" | sed '/^$/d' | sort -u)
done
[ "$all_used" = "$declared" ] || die "privacy manifest mismatch: the libraries use [$(words "$all_used")], PrivacyInfo.xcprivacy declares [$(words "$declared")]"

# One library per platform variant (device, simulator fat binaries), headers with the module map
# in their own subdirectory (Xcode merges every XCFramework's Headers into one include folder).
assemble() { # variant slices...
  local variant=$1; shift
  local dir="$work/xc/$variant"
  mkdir -p "$dir/Headers/CTrackerLibcurl"
  local libs=()
  for s in "$@"; do libs+=("$work/prefix/$s/libCTrackerLibcurl.a"); done
  lipo -create "${libs[@]}" -output "$dir/libCTrackerLibcurl.a"
  cp -R "$work/prefix/$1/include/curl" "$dir/Headers/curl"
  cp "$here/module.modulemap" "$here/CTrackerLibcurl.h" "$dir/Headers/CTrackerLibcurl/"
  echo "-library $dir/libCTrackerLibcurl.a -headers $dir/Headers"
}
args=()
while read -r variant; do
  # shellcheck disable=SC2207,SC2086
  args+=($(assemble $variant))
done < <(curl_apple_variants)

xc="$out/CTrackerLibcurl.xcframework"
rm -rf "$xc"
xcodebuild -create-xcframework "${args[@]}" -output "$xc" >/dev/null
for slice in "$xc"/*/; do cp "$here/PrivacyInfo.xcprivacy" "$slice"; done
# The licences travel with the binary.
mkdir -p "$xc/Licenses"
cp "$work/src/curl/COPYING" "$xc/Licenses/curl.txt"
cp "$work/src/openssl/LICENSE.txt" "$xc/Licenses/openssl.txt"
cp "$work/src/nghttp2/COPYING" "$xc/Licenses/nghttp2.txt"

if [ -n "${CURL_APPLE_SIGN_IDENTITY:-}" ]; then
  codesign --timestamp --sign "$CURL_APPLE_SIGN_IDENTITY" "$xc"
elif [ -n "${RELEASE:-}" ]; then
  die "RELEASE=1 needs CURL_APPLE_SIGN_IDENTITY: a released XCFramework is signed"
else
  echo "curl-apple: not signed (set CURL_APPLE_SIGN_IDENTITY to sign)"
fi

(cd "$out" && rm -f CTrackerLibcurl.xcframework.zip \
  && find CTrackerLibcurl.xcframework -exec touch -h -t "$(date -r "$SOURCE_DATE_EPOCH" +%Y%m%d%H%M.%S)" {} + \
  && find CTrackerLibcurl.xcframework | LC_ALL=C sort | zip -q -X -y -@ CTrackerLibcurl.xcframework.zip)
if command -v swift >/dev/null; then
  swift package compute-checksum "$out/CTrackerLibcurl.xcframework.zip" > "$out/CTrackerLibcurl.xcframework.zip.checksum"
fi
echo "curl-apple: $xc (curl $CURL_VERSION, OpenSSL $OPENSSL_VERSION, nghttp2 $NGHTTP2_VERSION)"
