// Foundation's value types as props and traits (issue 37 item 9). Apple platforms only: the
// Linux build of the tracker links no Foundation (`make check-no-foundation`). The conversions
// themselves are portable (`ScorePropertyValues`) and tested on Linux.
#if canImport(Darwin)
    import Foundation
    import TrackerCore

    /// An ISO 8601 timestamp in UTC with milliseconds (`2026-03-01T12:00:01.234Z`), the form of
    /// the envelope's `timestamp`.
    extension Date: ScorePropertyConvertible {
        /// The timestamp; `nil` (the key is dropped) outside the years 0000–9999.
        public var scorePropertyValue: JSONValue? { ScorePropertyValues.timestamp(secondsSince1970: timeIntervalSince1970) }
    }

    /// The URL's `absoluteString`.
    extension URL: ScorePropertyConvertible {
        /// The `absoluteString`.
        public var scorePropertyValue: JSONValue? { .string(absoluteString) }
    }

    /// The UUID in lowercase, the form of the envelope's ids.
    extension UUID: ScorePropertyConvertible {
        /// The `uuidString`, lowercased.
        public var scorePropertyValue: JSONValue? { ScorePropertyValues.uuid(uuidString) }
    }

    /// A JSON number with the decimal's digits (up to 15 significant digits; beyond, the nearest
    /// double).
    extension Decimal: ScorePropertyConvertible {
        /// The number; `nil` (the key is dropped) for `NaN`.
        public var scorePropertyValue: JSONValue? { ScorePropertyValues.decimal(description) }
    }
#endif
