#!/bin/sh
# Fails when a Linux binary using only Core, Onboarding, Paywall or Score links a Foundation
# library (issue 36 item 5): the trackers must not load Foundation's libraries (several MB of
# resident memory) on Linux. Builds the four programs of Tools/foundation-check and lists the
# libraries each one loads (ldd, so indirect ones count too; readelf -d when ldd is missing).
# Run by `make test-all` (`make check-no-foundation`). Elsewhere than Linux it says so and passes.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SWIFT=${SWIFT:-swift}
PKG="$ROOT/Tools/foundation-check"
PROGRAMS="core-only onboarding-only paywall-only score-only"

if [ "$(uname -s)" != "Linux" ]; then
  echo "check-no-foundation: not Linux, nothing to check"
  exit 0
fi

libraries() {
  if command -v ldd >/dev/null 2>&1; then
    ldd "$1" | awk '{print $1}'
  else
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'
  fi
}

# Prints one line per program; returns 1 when one links Foundation.
check() {
  $SWIFT build --package-path "$PKG" >/dev/null
  bin=$($SWIFT build --package-path "$PKG" --show-bin-path)
  result=0
  for p in $PROGRAMS; do
    exe="$bin/$p"
    if [ ! -x "$exe" ]; then
      echo "check-no-foundation: $exe was not built" >&2
      exit 1
    fi
    found=$(libraries "$exe" | grep -i 'foundation' || true)
    if [ -n "$found" ]; then
      echo "check-no-foundation: $p links Foundation: $(echo $found)"
      result=1
    else
      echo "check-no-foundation: $p links no Foundation library"
    fi
  done
  return $result
}

if out=$(check); then
  echo "$out"
  exit 0
fi
# An incremental build can keep a module's record of a library its dependency no longer imports
# (a client not recompiled after TrackerCore dropped Foundation): confirm from a clean build.
rm -rf "$PKG/.build"
if out=$(check); then
  echo "$out"
  exit 0
fi
echo "$out" >&2
exit 1
