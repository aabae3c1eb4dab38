#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A source of random bytes for id minting. Injected so tests get fixed ids.
public protocol RandomSource: Sendable {
    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

/// The system's cryptographic random source.
public struct SystemRandomSource: RandomSource {
    /// Creates the system random source.
    public init() {}

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count > 0 else { return }
        // SystemRandomNumberGenerator is cryptographically secure (getrandom / arc4random).
        var g = SystemRandomNumberGenerator()
        var i = 0
        while i < buffer.count {
            var word = g.next()
            let n = min(8, buffer.count - i)
            withUnsafeBytes(of: &word) { w in
                for k in 0..<n { buffer[i + k] = w[k] }
            }
            i += n
        }
    }
}

/// Identifier minting and checking.
public enum IDs {
    /// Mints a lowercase UUIDv7: 48-bit big-endian milliseconds, version nibble 7, variant `10`,
    /// the remaining bits from `random`. A negative time counts as 0.
    public static func uuidV7(nowMs: Int64, random: some RandomSource = SystemRandomSource()) -> String {
        var b = [UInt8](repeating: 0, count: 16)
        b.withUnsafeMutableBytes { random.fill($0) }
        return uuidV7(nowMs: nowMs, randomBytes: b)
    }

    /// Mints a UUIDv7 from exactly 16 given bytes (the first six are replaced by the time).
    public static func uuidV7(nowMs: Int64, randomBytes: [UInt8]) -> String {
        precondition(randomBytes.count == 16, "UUIDv7 needs 16 bytes")
        var b = randomBytes
        let t = UInt64(max(0, nowMs)) & 0xFFFF_FFFF_FFFF
        for i in 0..<6 { b[i] = UInt8(truncatingIfNeeded: t >> (8 * (5 - UInt64(i)))) }
        b[6] = 0x70 | (b[6] & 0x0F)
        b[8] = 0x80 | (b[8] & 0x3F)
        return formatUUID(b)
    }

    /// Mints a lowercase random UUIDv4.
    public static func uuidV4(random: some RandomSource = SystemRandomSource()) -> String {
        var b = [UInt8](repeating: 0, count: 16)
        b.withUnsafeMutableBytes { random.fill($0) }
        b[6] = 0x40 | (b[6] & 0x0F)
        b[8] = 0x80 | (b[8] & 0x3F)
        return formatUUID(b)
    }

    /// Lowercase 8-4-4-4-12 hex form of 16 bytes.
    public static func formatUUID(_ b: [UInt8]) -> String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in b.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(45) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` is a lowercase UUID (`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).
    public static func isLowercaseUUID(_ text: String) -> Bool {
        var count = 0
        for (i, c) in text.utf8.enumerated() {
            count += 1
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != 45 { return false }
            } else if !((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) {
                return false
            }
            if count > 36 { return false }
        }
        return count == 36
    }
}
