import Testing

@testable import BlueLibraryAPI

struct SortTextTests {
    @Test("a key folds case, accents and compatibility forms in every script, and white space to single spaces", arguments: [
        ("Björk", "bjork"), ("Sigur Rós", "sigur ros"), ("Motörhead", "motorhead"), ("Beyoncé", "beyonce"),
        ("Mötley Crüe", "motley crue"), ("Sinéad O'Connor", "sinead o'connor"), ("Кино", "кино"), ("Виктор Цой", "виктор цои"),
        ("坂本龍一", "坂本龍一"), ("Ελευθερία Αρβανιτάκη", "ελευθερια αρβανιτακη"), ("İbrahim Tatlıses", "ibrahim tatlises"),
        ("Œuvres", "oeuvres"), ("Straße", "strasse"), ("  The\tDark  Side\n", "the dark side"), ("", ""), ("   ", ""),
        ("AC/DC", "ac/dc"), ("ﬁre", "fire"),
    ])
    func keys(_ text: String, _ key: String) {
        #expect(SortText.key(text) == key)
    }

    @Test("an artist's key drops one leading article, as a whole word followed by more", arguments: [
        ("The Beatles", "beatles"), ("THE BEATLES", "beatles"), ("the  beatles", "beatles"), ("The The", "the"),
        ("The", "the"), ("Theatre of Tragedy", "theatre of tragedy"), ("A Tribe Called Quest", "tribe called quest"),
        ("An Pierlé", "pierle"), ("Abba", "abba"), ("A", "a"), ("Ánother", "another"), ("The A Team", "a team"),
    ])
    func articles(_ artist: String, _ key: String) {
        #expect(SortText.artistKey(artist, ignoring: .standard) == key)
        #expect(SortText.artistKey(artist, ignoring: .none) == SortText.key(artist))
    }

    @Test("articles are folded, kept in order without repeats, and stored as one line")
    func storedArticles() {
        let articles = SortArticles(["Die", "DER", "die", "Ľa"])
        #expect(articles.words == ["die", "der", "la"])
        #expect(articles.description == "die der la")
        #expect(SortArticles(stored: articles.description) == articles)
        #expect(SortText.artistKey("Die Ärzte", ignoring: articles) == "arzte")
        #expect(SortText.artistKey("La Düsseldorf", ignoring: articles) == "dusseldorf")
        #expect(SortArticles(stored: "") == .none)
    }

    @Test("a setting's articles are single words of letters or digits, at most 20 of at most 20 characters")
    func articleProblems() {
        #expect(SortArticles.problem(with: ["The", "A", "An", "Die", "L", "Ελ"]) == nil)
        #expect(SortArticles.problem(with: []) == nil)
        for bad in ["", " ", "L'", "two words", "a-b", String(repeating: "x", count: 21), "\u{0}"] {
            #expect(SortArticles.problem(with: [bad]) != nil, "\"\(bad)\"")
        }
        #expect(SortArticles.problem(with: Array(repeating: "x", count: 21)) != nil)
    }

    @Test("a key longer than 1,024 bytes is cut at a character, never inside one")
    func longKeys() {
        let key = SortText.key(String(repeating: "㍿", count: 500))  // 12 bytes each, folded
        #expect(key.utf8.count <= SortText.maximumBytes)
        #expect(key.utf8.count > SortText.maximumBytes - 4)
        #expect(String(validating: key.utf8, as: UTF8.self) != nil)
        #expect(SortText.key(String(repeating: "a", count: 2000)).utf8.count == SortText.maximumBytes)
    }

    @Test("ASCII text takes a shortcut to the same key")
    func asciiShortcut() {
        let every = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self)
        for text in [every, "  The \t Beatles\n", "AC/DC", "", " ", "x" + String(repeating: " a", count: 700), "\u{1C}a\u{1F}"] {
            #expect(SortText.key(text) == SortText.unicodeKey(text), "\(text.debugDescription)")
        }
    }
}
