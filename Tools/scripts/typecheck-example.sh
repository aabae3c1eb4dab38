#!/usr/bin/env bash
# Type-checks the example app's platform-independent file (Examples/iOSApp/Shared/Tracking.swift)
# on Linux with warnings as errors, as its Xcode project builds it (issue 27, item 7): a deprecated
# or missing SDK API fails here instead of on the first Mac. The SDK modules come from the
# Integration package's build (every package by path; incremental in `make test-all`); the one
# Darwin-only API the file calls is stubbed (fixtures/example-stubs). The app and widget files
# need SwiftUI and WidgetKit: only a Mac compiles them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
swift=${SWIFT:-swift}
"$swift" build --package-path "$root/Integration" --target IntegrationExamples -q
bin=$("$swift" build --package-path "$root/Integration" --show-bin-path)
"${SWIFTC:-swiftc}" -typecheck -swift-version 6 -strict-concurrency=complete -warnings-as-errors \
  -I "$bin/Modules" -I "$bin/CTrackerCurlShim.build" \
  "$root/Examples/iOSApp/Shared/Tracking.swift" "$root/Tools/scripts/fixtures/example-stubs/AppleStorageDirectory.swift"
echo "typecheck-example: Examples/iOSApp/Shared/Tracking.swift type-checks with warnings as errors"
