// Supported platforms: Linux, iOS 15, macOS 12, tvOS 15, visionOS 1 (the floors in every
// Package.swift). Anything newer is behind `#available`/`@available` with a fallback.
#if os(watchOS)
    #error(
        "The tracker SDKs do not support watchOS: libcurl needs BSD sockets, which watchOS apps cannot use. Send from the paired iPhone app instead."
    )
#endif
