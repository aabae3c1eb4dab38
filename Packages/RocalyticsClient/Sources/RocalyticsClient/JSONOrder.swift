import TrackerCore

extension JSONValue {
    /// The value with every object's members in JavaScript's property order (TrackerCore's Wire
    /// encoding article, key order): keys that are canonical array indices (`"0"`, `"7"`, `"42"`,
    /// not `"07"`) first in ascending numeric order, then the other keys in insertion order.
    /// Applied to every free-form map the app passes, as the reference's `JSON.stringify` of a
    /// JavaScript object would order it.
    public func javaScriptOrdered() -> JSONValue {
        switch self {
        case .object(let o): .object(o.javaScriptOrdered())
        case .array(let a): .array(a.map { $0.javaScriptOrdered() })
        default: self
        }
    }
}

extension JSONObject {
    /// The object in JavaScript's property order, recursively (see ``JSONValue/javaScriptOrdered()``).
    public func javaScriptOrdered() -> JSONObject {
        var indices: [(UInt32, String, JSONValue)] = []
        var others: [(String, JSONValue)] = []
        for (k, v) in entries {
            if let i = canonicalArrayIndex(k) {
                indices.append((i, k, v.javaScriptOrdered()))
            } else {
                others.append((k, v.javaScriptOrdered()))
            }
        }
        var out = JSONObject()
        for (_, k, v) in indices.sorted(by: { $0.0 < $1.0 }) { out.appendUnchecked(k, v) }
        for (k, v) in others { out.appendUnchecked(k, v) }
        return out
    }
}

/// `key` as an array index when it is canonical: `String(ToUint32(key)) == key` and below 2^32 - 1.
func canonicalArrayIndex(_ key: String) -> UInt32? {
    let u = Array(key.utf8)
    guard !u.isEmpty, u.count <= 10, u.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
    if u.count > 1 && u[0] == 48 { return nil }
    var v: UInt64 = 0
    for c in u { v = v * 10 + UInt64(c - 48) }
    guard v < 4_294_967_295 else { return nil }
    return UInt32(v)
}
