/// Byte arrays written in place.
public enum ByteArrays {
    /// An array of up to `count` bytes that `body` writes in place, setting how many it
    /// initialized, as `Array(unsafeUninitializedCapacity:initializingWith:)` does, except that
    /// a `count` of 0 gives `[]` without calling `body`.
    ///
    /// The standard initializer writes the count of the one storage all empty arrays share even
    /// for a capacity of 0. The write is harmless, but ThreadSanitizer reports it as a race with
    /// every thread that reads an empty array meanwhile (it failed `make test-tsan` once).
    @inlinable
    public static func make(
        count: Int, _ body: (_ buffer: inout UnsafeMutableBufferPointer<UInt8>, _ initialized: inout Int) throws -> Void
    ) rethrows -> [UInt8] {
        guard count > 0 else { return [] }
        return try [UInt8](unsafeUninitializedCapacity: count, initializingWith: body)
    }
}
