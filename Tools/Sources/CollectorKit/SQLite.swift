import CCollectorSQLite

/// An SQLite error, with the library's message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The message from SQLite (never contains bound values).
    public let message: String
    public var description: String { "sqlite: \(message)" }
}

/// A value bound to, or read from, an SQL statement.
enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case blob([UInt8])
}

/// A minimal SQLite connection (one per store; not shared across threads without a lock).
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    // SQLITE_TRANSIENT: SQLite copies bound text before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory one.
    init(path: String) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        if sqlite3_open_v2(path, &db, flags, nil) != SQLITE_OK {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw SQLiteError(message: message)
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close(handle) }

    private var lastError: SQLiteError { SQLiteError(message: String(cString: sqlite3_errmsg(handle))) }

    /// Runs one or more statements without parameters.
    func execute(_ sql: String) throws(SQLiteError) {
        if sqlite3_exec(handle, sql, nil, nil, nil) != SQLITE_OK { throw lastError }
    }

    /// Runs one statement with parameters and returns every row.
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue] = []) throws(SQLiteError) -> [[SQLValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw lastError }
        defer { sqlite3_finalize(statement) }
        for (i, value) in parameters.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, index)
            case .int(let n): rc = sqlite3_bind_int64(statement, index, n)
            case .text(let s): rc = sqlite3_bind_text(statement, index, s, -1, Self.transient)
            case .blob(let b):
                rc = b.withUnsafeBytes {
                    sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), Self.transient)
                }
            }
            guard rc == SQLITE_OK else { throw lastError }
        }
        var rows: [[SQLValue]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw lastError }
            var row: [SQLValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: row.append(.null)
                case SQLITE_INTEGER: row.append(.int(sqlite3_column_int64(statement, column)))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count > 0, let bytes = sqlite3_column_blob(statement, column) {
                        row.append(.blob(Array(UnsafeRawBufferPointer(start: bytes, count: count))))
                    } else {
                        row.append(.blob([]))
                    }
                default:
                    if let text = sqlite3_column_text(statement, column) {
                        row.append(.text(String(cString: text)))
                    } else {
                        row.append(.null)
                    }
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Runs `body` inside one transaction (rolled back when it throws).
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

extension SQLValue {
    var int: Int64? { if case .int(let n) = self { n } else { nil } }
    var text: String? { if case .text(let s) = self { s } else { nil } }
    var bytes: [UInt8]? {
        switch self {
        case .blob(let b): b
        case .text(let s): Array(s.utf8)
        default: nil
        }
    }
}
