#!/bin/sh
# Builds the DocC documentation of every package module (`make docs`): one archive per module in
# out/docs/<Module>.doccarchive, from the module's catalog (Sources/<Module>/<Module>.docc) and
# the symbol graphs SwiftPM extracts (`swift package dump-symbol-graph`, built into SwiftPM, so no
# swift-docc-plugin and no network are needed). Fails on any DocC warning: a broken symbol or
# article link, in a catalog or in a doc comment, fails the build; and on a `<doc:>` reference in
# the module's code (any comment) that names no article or heading (Tools/scripts/check-doc-refs.py).
#
# `sh Tools/scripts/build-docs.sh [Module ...]` builds only the modules named.
# Environment: SWIFT (default `swift`), DOCC (default: the `docc` beside the `swift` in PATH,
# else `xcrun docc` on a Mac), DOCS_OUT (default out/docs).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
SWIFT=${SWIFT:-swift}
out=${DOCS_OUT:-$root/out/docs}

if [ -z "${DOCC:-}" ]; then
  swift_path=$(command -v "$SWIFT" 2>/dev/null || true)
  if [ -n "$swift_path" ] && [ -x "$(dirname "$swift_path")/docc" ]; then
    DOCC="$(dirname "$swift_path")/docc"
  elif command -v docc >/dev/null 2>&1; then
    DOCC=docc
  elif command -v xcrun >/dev/null 2>&1; then
    DOCC="xcrun docc"
  else
    echo "build-docs: no docc found (set DOCC)" >&2
    exit 1
  fi
fi

# package:module pairs, in dependency order.
all="Core:TrackerCore Onboarding:OnboardingTracker Paywall:PaywallTracker RocalyticsClient:RocalyticsClient Score:ScoreTracker"
selected=""
if [ $# -gt 0 ]; then
  for want in "$@"; do
    for pair in $all; do [ "${pair#*:}" = "$want" ] && selected="$selected $pair"; done
  done
  [ -n "$selected" ] || { echo "build-docs: unknown module(s): $*" >&2; exit 2; }
else
  selected=$all
fi

mkdir -p "$out"
status=0
for pair in $selected; do
  package=${pair%%:*}
  module=${pair#*:}
  catalog="$root/Packages/$package/Sources/$module/$module.docc"
  log="$out/$module.log"
  echo "== docs: $module"
  # Every <doc:> reference in the module's code names an article (and heading) of its catalog;
  # the code generator writes TrackerCore's generated files, so its references count there.
  extra=""
  [ "$module" = TrackerCore ] && extra="--extra-sources $root/Tools/Sources/codegen"
  if ! ${PYTHON:-python3} "$root/Tools/scripts/check-doc-refs.py" "$root/Packages/$package/Sources/$module" "$catalog" $extra; then
    echo "build-docs: $module: the code refers to a missing article or heading (above)" >&2
    status=1
  fi
  # The symbol graphs of the package's modules (public symbols). SwiftPM also tries its test
  # pseudo-modules (`<Package>PackageTests`), which fails and makes the command exit non-zero
  # although every library module's graph was written: success is this module's fresh graph.
  rm -rf "$root/Packages/$package/.build"/*/symbolgraph
  "$SWIFT" package --package-path "$root/Packages/$package" dump-symbol-graph \
    --skip-synthesized-members >"$log" 2>&1 || true
  graphs=$(sed -n 's/^Files written to //p' "$log" | tail -1)
  if [ -z "$graphs" ] || [ ! -f "$graphs/$module.symbols.json" ]; then
    cat "$log"; echo "build-docs: no symbol graph for $module" >&2; exit 1
  fi
  # Only this module's graphs (and its extensions of other modules' types, Module@Other).
  dir="$out/.symbol-graphs/$module"
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$graphs/$module.symbols.json" "$dir/"
  for extension in "$graphs/$module"@*.symbols.json; do
    [ -f "$extension" ] && cp "$extension" "$dir/"
  done
  rm -rf "$out/$module.doccarchive"
  if ! $DOCC convert "$catalog" \
        --additional-symbol-graph-dir "$dir" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "com.rocalytics.$module" \
        --transform-for-static-hosting \
        --enable-inherited-docs \
        --warnings-as-errors \
        --output-path "$out/$module.doccarchive" >"$log" 2>&1 \
     || grep -q "warning:" "$log"; then
    cat "$log"
    echo "build-docs: $module: DocC reported warnings or errors (above)" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "docs: $out/<Module>.doccarchive (serve one with a static web server, then open /documentation/<module>/)"
exit "$status"
