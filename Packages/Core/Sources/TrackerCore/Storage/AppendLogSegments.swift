#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// Reading a log that is one segment of a chain (Score's queue log, issue 35): the older
// segments are only read at start-up, never opened for writing, and no descriptor is held for
// each of them (a chain may have hundreds).
extension AppendLog {
    /// Follows the frames of the log at `path` like
    /// ``openFollowingLengths(path:sync:expect:visit:)``, through a read-only descriptor closed
    /// before returning. Returns the frames' offsets and where the last one ends, or `nil` when
    /// the frames do not tile the file (a torn or damaged tail), when its last frame is empty or
    /// does not match its checksum, or when `visit` said stop: the caller then loads carefully.
    /// `expect` is called first with the file's size.
    public static func followLengths(
        path: String, expect: (_ fileBytes: Int) -> Void = { _ in },
        visit: (_ index: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool
    ) throws(AppendLogError) -> (offsets: [Int], end: Int)? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
        defer { _ = FileFaults.close(fd) }
        let size = Int(lseek(fd, 0, SEEK_END))
        expect(max(0, size))
        guard let (offsets, end) = try walkFrames(fd, limit: nil, fileBytes: size >= 0 ? size : nil, visit),
            lastFrameIsIntact(fd, offsets: offsets, end: end)
        else { return nil }
        return (offsets, end)
    }
}

extension AppendLog.FrameReader {
    /// A reader of the frames at `offsets` (ending at `end`) of the log at `path`, found earlier
    /// by ``AppendLog/followLengths(path:expect:visit:)``, through a read-only descriptor of its
    /// own, held until the reader is released.
    public static func open(path: String, offsets: [Int], end: Int) throws(AppendLogError) -> AppendLog.FrameReader {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
        return AppendLog.FrameReader(fd: fd, offsets: offsets, end: end)
    }
}
