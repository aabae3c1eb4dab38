# shellcheck shell=bash
# The decisions of build.sh that need no Mac, sourced by build.sh and tested on Linux by
# test-build.sh (`make check-apple`): the pins' policy, the slices and XCFramework variants, and
# the required-reason symbol check. Plain lists, no associative arrays: macOS ships bash 3.2.

# Fails unless every source is pinned: a version, an https URL naming that version, and a
# SHA-256 of 64 lowercase hex digits (never an unpinned tarball); nghttp2 has the
# CVE-2026-27135 fix (1.68.1 or later) and OpenSSL is of the 3.5 LTS series.
curl_apple_check_pins() {
  local name version url sha
  for name in CURL OPENSSL NGHTTP2; do
    eval "version=\${${name}_VERSION:-} url=\${${name}_URL:-} sha=\${${name}_SHA256:-}"
    [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "curl-apple: ${name}_VERSION is not pinned (got '$version')" >&2; return 1; }
    [[ $url =~ ^https:// ]] || { echo "curl-apple: ${name}_URL must be https (got '$url')" >&2; return 1; }
    [[ $url == *"$version"* ]] || { echo "curl-apple: ${name}_URL does not name version $version" >&2; return 1; }
    [[ $sha =~ ^[0-9a-f]{64}$ ]] || { echo "curl-apple: ${name}_SHA256 is not a published SHA-256 (got '$sha'): refusing an unpinned tarball" >&2; return 1; }
  done
  curl_apple_version_at_least "$NGHTTP2_VERSION" 1.68.1 \
    || { echo "curl-apple: nghttp2 $NGHTTP2_VERSION lacks the CVE-2026-27135 fix (1.68.1)" >&2; return 1; }
  [[ $OPENSSL_VERSION == 3.5.* ]] || { echo "curl-apple: OpenSSL $OPENSSL_VERSION is not of the 3.5 LTS series" >&2; return 1; }
}

# Whether dotted version $1 >= $2.
curl_apple_version_at_least() {
  local a b i
  IFS=. read -r -a a <<<"$1"
  IFS=. read -r -a b <<<"$2"
  for i in 0 1 2; do
    [ "${a[i]:-0}" -gt "${b[i]:-0}" ] && return 0
    [ "${a[i]:-0}" -lt "${b[i]:-0}" ] && return 1
  done
  return 0
}

# The slices, one a line: name sdk arch target-triple (needs the *_MIN floors of versions.env).
# Mac Catalyst is an iOS build against the macOS SDK (`-macabi` triples, the iOS floor).
curl_apple_slices() {
  cat <<EOF
ios-arm64 iphoneos arm64 arm64-apple-ios$IOS_MIN
ios-sim-arm64 iphonesimulator arm64 arm64-apple-ios$IOS_MIN-simulator
ios-sim-x86_64 iphonesimulator x86_64 x86_64-apple-ios$IOS_MIN-simulator
maccatalyst-arm64 macosx arm64 arm64-apple-ios$IOS_MIN-macabi
maccatalyst-x86_64 macosx x86_64 x86_64-apple-ios$IOS_MIN-macabi
macos-arm64 macosx arm64 arm64-apple-macos$MACOS_MIN
macos-x86_64 macosx x86_64 x86_64-apple-macos$MACOS_MIN
tvos-arm64 appletvos arm64 arm64-apple-tvos$TVOS_MIN
tvos-sim-arm64 appletvsimulator arm64 arm64-apple-tvos$TVOS_MIN-simulator
tvos-sim-x86_64 appletvsimulator x86_64 x86_64-apple-tvos$TVOS_MIN-simulator
xros-arm64 xros arm64 arm64-apple-xros$VISIONOS_MIN
xros-sim-arm64 xrsimulator arm64 arm64-apple-xros$VISIONOS_MIN-simulator
EOF
}

# The XCFramework's variants, one a line: variant slice... (each variant one fat library).
curl_apple_variants() {
  cat <<EOF
ios ios-arm64
ios-sim ios-sim-arm64 ios-sim-x86_64
maccatalyst maccatalyst-arm64 maccatalyst-x86_64
macos macos-arm64 macos-x86_64
tvos tvos-arm64
tvos-sim tvos-sim-arm64 tvos-sim-x86_64
xros xros-arm64
xros-sim xros-sim-arm64
EOF
}

# Required-reason APIs (Apple's "Describing use of required reason API") as the merged static
# libraries' undefined symbols name them, with the privacy manifest's category. curl's clock is
# clock_gettime(CLOCK_MONOTONIC[_RAW]) wherever configure finds it (every floor here: iOS 10,
# macOS 10.12 and later), mach_absolute_time only as its fallback (lib/curlx/timeval.c); OpenSSL
# calls clock_gettime too. nm cannot tell which clock a clock_gettime call reads, so it counts as
# system boot time (the same conservative choice as TrackerCoreTestKit's audit).
curl_apple_symbol_categories() {
  cat <<EOF
_stat FileTimestamp
_fstat FileTimestamp
_lstat FileTimestamp
_fstatat FileTimestamp
_getattrlist FileTimestamp
_getattrlistbulk FileTimestamp
_fgetattrlist FileTimestamp
_getattrlistat FileTimestamp
_clock_gettime SystemBootTime
_clock_gettime_nsec_np SystemBootTime
_mach_absolute_time SystemBootTime
_mach_continuous_time SystemBootTime
_statfs DiskSpace
_statvfs DiskSpace
_fstatfs DiskSpace
_fstatvfs DiskSpace
EOF
}

# The categories the undefined symbols on stdin (`nm -u` output) use, sorted, one a line.
curl_apple_categories_used() {
  local used sym category
  # shellcheck disable=SC2016 # a literal `$`: x86_64 macOS names stat `_stat$INODE64`
  used=$(awk 'NF {print $NF}' | sed -E 's/\$(INODE64|UNIX2003)$//' | sort -u)
  curl_apple_symbol_categories | while read -r sym category; do
    if grep -qx "$sym" <<<"$used"; then echo "$category"; fi
  done | sort -u
}

# The categories privacy manifest $1 declares, sorted, one a line.
curl_apple_categories_declared() {
  grep -o 'NSPrivacyAccessedAPICategory[A-Za-z]*' "$1" | sed 's/NSPrivacyAccessedAPICategory//' | sort -u
}
