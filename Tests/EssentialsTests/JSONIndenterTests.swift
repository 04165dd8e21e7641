import Essentials
import Foundation
import TestThreads
import Testing

@Suite(.ownThreads) struct JSONIndenterTests {
    private func indented(_ text: String) -> String {
        String(decoding: JSONIndenter.indent(Array(text.utf8)), as: UTF8.self)
    }

    @Test func indentsObjectsAndArraysTwoSpacesPerLevel() {
        #expect(indented(#"{"a":[1,2],"b":{},"c":[],"d":{"e":null}}"#) == """
            {
              "a" : [
                1,
                2
              ],
              "b" : {},
              "c" : [],
              "d" : {
                "e" : null
              }
            }

            """)
        #expect(indented("[]\n") == "[]\n")
        #expect(indented("7") == "7\n")
    }

    @Test func stringsAreCopiedByteForByte() {
        let text = #"{"k,:{[":"v \" \\ ,:{}[] \n","x":"\\"}"#
        #expect(indented(text) == """
            {
              "k,:{[" : "v \\" \\\\ ,:{}[] \\n",
              "x" : "\\\\"
            }

            """)
    }

    @Test func indentedTextParsesToTheSameValue() throws {
        let compact = Array(#"{"items":[{"id":"a","n":-1.5e3,"t":true,"u":"é😀\u0001"},{"id":"b","x":[[],[{}]]}],"next":null}"#.utf8)
        let pretty = JSONIndenter.indent(compact)
        #expect(pretty.count > compact.count)
        let a = try JSONSerialization.jsonObject(with: Data(compact)) as! NSObject
        let b = try JSONSerialization.jsonObject(with: Data(pretty)) as! NSObject
        #expect(a == b)
    }
}
