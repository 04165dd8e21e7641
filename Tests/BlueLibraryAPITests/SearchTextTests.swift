import BlueLibraryAPI
import TestThreads
import Testing

/// Folding and tokens against real names, and the query rule (every word, the last as a prefix).
@Suite(.ownThreads) struct SearchTextTests {
    static let folded: [(name: String, tokens: [String])] = [
        ("Björk", ["bjork"]),
        ("BJÖRK", ["bjork"]),
        ("Sigur Rós", ["sigur", "ros"]),
        ("Motörhead", ["motorhead"]),
        ("Beyoncé", ["beyonce"]),
        ("Mötley Crüe", ["motley", "crue"]),
        ("Sinéad O'Connor", ["sinead", "o", "connor"]),
        ("Кино", ["кино"]),
        ("Виктор Цой", ["виктор", "цои"]),
        ("坂本龍一", ["坂本龍一"]),
        ("Ελευθερία Αρβανιτάκη", ["ελευθερια", "αρβανιτακη"]),
        ("İbrahim Tatlıses", ["ibrahim", "tatlises"]),
        ("Œuvres", ["oeuvres"]),
        ("Straße", ["strasse"]),
        ("Sørensen Ærø", ["sorensen", "aero"]),
        ("Łódź", ["lodz"]),
        ("AC/DC", ["ac", "dc"]),
        ("ﬁre Ｆｕｌｌ", ["fire", "full"]),
        ("The Dark Side of the Moon", ["the", "dark", "side", "of", "the", "moon"]),
        ("...", []),
    ]

    @Test(arguments: folded.indices)
    func realNamesFoldToTheirTokens(_ index: Int) {
        let (name, tokens) = Self.folded[index]
        #expect(SearchText.tokens(name) == tokens, "\(name)")
    }

    /// ASCII text takes a shorter way to the same tokens as the general one (checked on every
    /// printable ASCII character, alone and between letters).
    @Test func asciiTextGivesTheTokensOfTheGeneralFolding() {
        for byte in UInt8(0x20)..<0x7F {
            let character = String(UnicodeScalar(byte))
            for text in [character, "Ab\(character)Cd", "\(character)x9\(character)"] {
                // A non-ASCII letter sends the text the general way; drop its token to compare.
                #expect(SearchText.tokens(text) == Array(SearchText.tokens(text + " é").dropLast()), "\(text)")
            }
        }
    }

    /// Й keeps nothing of its breve (it folds to и), as search engines fold it.
    @Test func cyrillicShortIFoldsLikeSearchEngines() {
        #expect(SearchText.fold("Цой") == "цои")
    }

    static func matches(_ query: String, title: String, artist: String, genre: String = "Rock") -> Bool {
        guard let query = SearchQuery(query) else { return false }
        return query.matches(document: SearchText.document(title: title, artist: artist, genre: genre))
    }

    @Test func everyWordInAnyFieldInAnyOrderTheLastAsAPrefix() {
        #expect(Self.matches("bjork", title: "Homogenic", artist: "Björk"))
        #expect(Self.matches("BJÖRK", title: "Homogenic", artist: "Björk"))
        #expect(Self.matches("sigur ros", title: "Takk...", artist: "Sigur Rós"))
        #expect(Self.matches("виктор", title: "Группа крови", artist: "Виктор Цой"))
        #expect(Self.matches("dark moon", title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(Self.matches("floyd dark", title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(Self.matches("pink flo", title: "The Wall", artist: "Pink Floyd"))
        #expect(Self.matches("jazz", title: "Kind of Blue", artist: "Miles Davis", genre: "Jazz"))
        // A word before the last is a whole word; the last may be the start of one.
        #expect(!Self.matches("flo pink", title: "The Wall", artist: "Pink Floyd"))
        #expect(!Self.matches("loyd", title: "The Wall", artist: "Pink Floyd"))
        #expect(!Self.matches("pink zeppelin", title: "The Wall", artist: "Pink Floyd"))
        // Nothing to search for.
        #expect(SearchQuery("!!! --- :") == nil)
        #expect(SearchQuery("") == nil)
    }

    @Test func operatorsAUserTypesAreSearchedAsText() throws {
        let query = try #require(SearchQuery(#"NEAR -moon* title:blue AND (x OR y)"#))
        #expect(query.words == ["near", "moon", "title", "blue", "and", "x", "or"])
        #expect(query.prefix == "y")
        #expect(query.phrases.isEmpty)
    }

    @Test func quotedWordsAreAPhraseInOrder() throws {
        let query = try #require(SearchQuery(#"NEAR "Dark  Side" moo"#))
        #expect(query.words == ["near"])
        #expect(query.phrases == [["dark", "side"]])
        #expect(query.prefix == "moo")
        #expect(Self.matches(#""dark side""#, title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(Self.matches(#""DARK SIDE" moo"#, title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(Self.matches(#"pink "the moon""#, title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(!Self.matches(#""side dark""#, title: "The Dark Side of the Moon", artist: "Pink Floyd"), "in order")
        #expect(!Self.matches(#""dark moon""#, title: "The Dark Side of the Moon", artist: "Pink Floyd"), "one after another")
        #expect(!Self.matches(#""dark si""#, title: "The Dark Side of the Moon", artist: "Pink Floyd"), "whole words")
        // A query that ends in quotes has no prefix: its last word is whole.
        let closed = try #require(SearchQuery(#"pink "floyd""#))
        #expect(closed.words == ["pink", "floyd"] && closed.prefix == nil)
        #expect(!Self.matches(#"pink "flo""#, title: "The Wall", artist: "Pink Floyd"))
        // A quote left open runs to the end; empty quotes are nothing.
        #expect(try #require(SearchQuery(#"moon "dark side"#)).phrases == [["dark", "side"]])
        #expect(Self.matches(#"moon "dark side"#, title: "The Dark Side of the Moon", artist: "Pink Floyd"))
        #expect(SearchQuery(#""" "" "-""#) == nil)
    }
}
