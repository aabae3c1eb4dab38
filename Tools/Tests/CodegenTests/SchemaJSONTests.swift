// The generator's own JSON reader (it no longer borrows Core's, issue 16 item 5).
//
// Scenarios (new ids):
//   CG6  values, nesting, escapes and a surrogate pair read as written; every schema of the
//        repository reads.
//   CG7  malformed text is refused with its offset: trailing content, a duplicate member, a lone
//        surrogate, a raw control character, a leading zero, a missing value, an unterminated string.
import Foundation
import Testing

@testable import codegen

@Suite struct SchemaJSONTests {
    @Test func CG6_readsValuesAndEscapes() throws {
        let v = try SchemaJSON.parse(Array(#" {"a": [1, -2.5e1, true, false, null], "b": {"c": "x\"\\\/\n\u00e9\ud83d\ude00"}} "#.utf8))
        #expect(v["a"] == .array([.number(1), .number(-25), .bool(true), .bool(false), .null]))
        #expect(v["b"]?["c"]?.stringValue == "x\"\\/\né😀")
        #expect(v["missing"] == nil && v["a"]?["c"] == nil)
        #expect(try SchemaJSON.parse(Array("[]".utf8)) == .array([]) && SchemaJSON.parse(Array("{}".utf8)) == .object([:]))
        var schemas = ContractLayouts.all.map { "Packages/Core/Contracts/" + $0.schemaFile }
        let events = Repo.root.appendingPathComponent(ScoreEventsGenerator.schemaDir)
        schemas += try FileManager.default.contentsOfDirectory(atPath: events.path).map { ScoreEventsGenerator.schemaDir + "/" + $0 }
        for path in schemas {
            let bytes = [UInt8](try Data(contentsOf: Repo.root.appendingPathComponent(path)))
            #expect(try SchemaJSON.parse(bytes).objectValue?.isEmpty == false, "\(path)")
        }
    }

    @Test func CG7_refusesMalformedText() {
        func reason(_ text: String) -> SchemaJSONError? {
            do {
                _ = try SchemaJSON.parse(Array(text.utf8))
                return nil
            } catch {
                return error
            }
        }
        #expect(reason(#"{"a": 1} x"#) == SchemaJSONError(offset: 9, reason: "trailing content"))
        #expect(reason(#"{"a": 1, "a": 2}"#) == SchemaJSONError(offset: 9, reason: #"duplicate member "a""#))
        #expect(reason(#"["\ud83d"]"#)?.reason == "expected \\u")
        #expect(reason(#"["\ude00"]"#)?.reason == "unpaired surrogate")
        #expect(reason("[\"a\tb\"]")?.reason == "control character in a string")
        #expect(reason("[01]")?.reason == "expected ]")
        #expect(reason(#"{"a": }"#)?.reason == "unexpected character")
        #expect(reason(#"["abc"#)?.reason == "unterminated string")
        #expect(reason("")?.reason == "unexpected end")
        #expect(reason("1e999")?.reason == "number out of range")
    }
}
