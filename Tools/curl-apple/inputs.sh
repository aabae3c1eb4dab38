#!/bin/sh
# Prints the SHA-256 of everything CTrackerLibcurl.xcframework is built from: the Apple CI's
# cache key (a change to the script, the pins, the module map or the manifest rebuilds it).
cd "$(dirname "$0")" && cat build.sh lib.sh versions.env module.modulemap CTrackerLibcurl.h PrivacyInfo.xcprivacy | shasum -a 256 | cut -d' ' -f1
