#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A durable flush of a file's data to the storage device.
///
/// On Darwin `fsync` only hands the data to the drive, which may keep it in its cache across a
/// power loss; `fcntl(F_FULLFSYNC)` asks the drive to flush it (fcntl(2), "F_FULLFSYNC"). When a
/// file system does not support it, `fsync` is the fallback. Elsewhere `fsync` is durable.
@inline(__always)
public func durableSync(_ fd: Int32) -> Int32 {
    #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
    #endif
    return fsync(fd)
}
