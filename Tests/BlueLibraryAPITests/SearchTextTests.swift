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

    @Test("relevance: title and artist before genre, whole words before prefixes, the exact phrase first", arguments: [
        ("dark side", "The Dark Side of the Moon", "Pink Floyd", "Rock", 0),
        ("dark side", "Side Dark", "Pink Floyd", "Rock", 1),
        ("dark sid", "The Dark Side of the Moon", "Pink Floyd", "Rock", 2),
        ("dark sid", "Side Dark", "Pink Floyd", "Rock", 3),
        ("rock", "Abbey Road", "The Beatles", "Rock", 5),
        ("ro", "Abbey Road", "The Beatles", "Rock", 2),
        ("ja", "Abbey Road", "The Beatles", "Jazz", 7),
        ("love", "Love", "Arthur Lee", "Rock", 0),
        ("love", "Lovely Day", "Bill Withers", "Soul", 2),
        ("floyd dark", "The Dark Side of the Moon", "Pink Floyd", "Rock", 1),
        ("moon pink", "The Dark Side of the Moon", "Pink Floyd", "Rock", 1),
        ("pink rock", "Animals", "Pink Floyd", "Rock", 5),
        ("\"dark side\" moon", "The Dark Side of the Moon", "Pink Floyd", "Rock", 1),
        ("\"dark side\"", "The Dark Side of the Moon", "Pink Floyd", "Rock", 0),
        ("moon pink", "Moon", "Pink Floyd", "Rock", 1),
        ("the pink", "The Wall", "Pink Floyd", "Rock", 1),
    ])
    func ranks(_ q: String, _ title: String, _ artist: String, _ genre: String, _ rank: Int) throws {
        let query = try #require(SearchQuery(q))
        let document = SearchText.document(title: title, artist: artist, genre: genre)
        #expect(query.matches(document: document))
        #expect(query.rank(document: document) == rank, "\(document)")
        #expect(query.possibleRanks.contains(rank))
    }

    @Test("a phrase never runs from one field into the next")
    func phrasesStayInTheirField() throws {
        let document = SearchText.document(title: "Wish You Were Here", artist: "Pink Floyd", genre: "Rock")
        #expect(document == "wish you were here | pink floyd / rock")
        #expect(try #require(SearchQuery("\"here pink\"")).matches(document: document) == false)
        #expect(try #require(SearchQuery("\"floyd rock\"")).matches(document: document) == false)
        #expect(try #require(SearchQuery("here pink")).matches(document: document))
        #expect(SearchText.document(title: "", artist: "", genre: "") == "| /")
    }

    @Test("the ranks a query can give, and every rank given is one of them")
    func possibleRanks() throws {
        #expect(try #require(SearchQuery("love")).possibleRanks == [0, 2, 5, 7])
        #expect(try #require(SearchQuery("\"love\"")).possibleRanks == [0, 5])
        #expect(try #require(SearchQuery("dark side")).possibleRanks == [0, 1, 2, 3, 5, 7])
        #expect(try #require(SearchQuery("\"dark side\"")).possibleRanks == [0, 1, 5])
        var random = SystemRandomNumberGenerator()
        let words = ["dark", "side", "moon", "pink", "floyd", "rock", "da", "si", "mo", "the"]
        for _ in 0..<2000 {
            func text(_ count: Int) -> String { (0..<count).map { _ in words.randomElement(using: &random)! }.joined(separator: " ") }
            let document = SearchText.document(title: text(Int.random(in: 0...4, using: &random)), artist: text(2), genre: text(1))
            let q = text(Int.random(in: 1...3, using: &random))
            let query = try #require(SearchQuery(Bool.random(using: &random) ? q : "\"\(q)\""))
            guard query.matches(document: document) else { continue }
            #expect(query.possibleRanks.contains(query.rank(document: document)), "\(query) in \(document)")
        }
    }
}
