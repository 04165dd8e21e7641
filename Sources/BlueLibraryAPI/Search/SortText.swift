/// How the title, artist and genre sorts see text: the stored sort keys (`title_sort`,
/// `artist_sort`, `genre_sort`) every store orders by, compared as UTF-8 bytes on every engine (SQLite's BINARY,
/// PostgreSQL's `COLLATE "C"`, Swift's byte order), so SQLite, PostgreSQL and a client's
/// replica put albums in one order.
///
/// A key is the text folded as search folds it (`SearchText.fold`: "Björk" → "bjork",
/// "Ärzte" → "arzte", "Виктор" → "виктор"), with runs of white space made one space and none at
/// either end, cut to `maximumBytes`. An artist's key also drops one leading article of
/// ``SortArticles`` ("The Beatles" → "beatles"), as music players sort artists.
public enum SortText {
    /// The longest key, in UTF-8 bytes: a longer one keeps its first scalars up to this.
    /// PostgreSQL refuses a B-tree entry of more than about 2,700 bytes, and 500 characters of
    /// a title can fold to more.
    public static let maximumBytes = 1024

    /// The sort key of a title (or of any text, without articles).
    public static func key(_ text: String) -> String {
        text.utf8.allSatisfy({ $0 < 0x80 }) ? asciiKey(text) : unicodeKey(text)
    }

    /// `key` of any text.
    static func unicodeKey(_ text: String) -> String {
        var key = String.UnicodeScalarView()
        var bytes = 0
        var pendingSpace = false
        for scalar in SearchText.fold(text).unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !key.isEmpty
                continue
            }
            let width = UTF8.width(scalar) + (pendingSpace ? 1 : 0)
            if bytes + width > maximumBytes { break }
            if pendingSpace { key.append(" ") }
            key.append(scalar)
            bytes += width
            pendingSpace = false
        }
        return String(key)
    }

    /// `key` of ASCII text (most of what albums say), without decomposing it: the same result,
    /// letters lowered, runs of white space one space, none at either end.
    private static func asciiKey(_ text: String) -> String {
        var key: [UInt8] = []
        key.reserveCapacity(min(text.utf8.count, maximumBytes))
        var pendingSpace = false
        for byte in text.utf8 {
            switch byte {
            case 0x09...0x0D, 0x20:
                pendingSpace = !key.isEmpty
                continue
            default:
                break
            }
            if key.count + (pendingSpace ? 2 : 1) > maximumBytes { break }
            if pendingSpace { key.append(0x20) }
            key.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
            pendingSpace = false
        }
        return String(decoding: key, as: UTF8.self)
    }

    /// The sort key of an artist: `key(text)` without a leading article of `articles` (the
    /// article as a whole word followed by more: "The" alone stays "the", "Theatre" stays).
    public static func artistKey(_ text: String, ignoring articles: SortArticles) -> String {
        articles.strip(key(text))
    }
}

/// The leading words an artist sort ignores ("The", "A", "An" by default, as Navidrome's
/// "ignored articles"): the `sorting.ignoredArticles` setting, and what each library's stored
/// artist keys were made with (`libraries.sort_articles`).
public struct SortArticles: Sendable, Hashable, CustomStringConvertible {
    /// The articles folded (`SortText.key`), in the order given, without repeats.
    public let words: [String]

    /// The default: The, A, An.
    public static let standard = SortArticles(["The", "A", "An"])
    /// No article: artists sort by their whole name.
    public static let none = SortArticles([String]())

    /// The articles `words`, each folded (repeats dropped).
    public init(_ words: [String]) {
        var folded: [String] = []
        for word in words.map(SortText.key) where !word.isEmpty && !folded.contains(word) { folded.append(word) }
        self.words = folded
    }

    /// The stored form (`libraries.sort_articles`): the folded words, one space apart.
    public var description: String { words.joined(separator: " ") }

    /// The articles of a stored form.
    public init(stored: String) {
        self.init(stored.split(separator: " ").map(String.init))
    }

    /// `key` (a folded key) without its leading article, when one is followed by more.
    func strip(_ key: String) -> String {
        for word in words {
            let bytes = key.utf8
            guard bytes.count > word.utf8.count + 1, bytes.starts(with: word.utf8) else { continue }
            let rest = bytes.dropFirst(word.utf8.count)
            if rest.first == UInt8(ascii: " ") { return String(decoding: rest.dropFirst(), as: UTF8.self) }
        }
        return key
    }

    /// Why `words` cannot be a setting, or nil when it can: at most `maximumCount` articles,
    /// each one word (letters and digits) of at most `maximumLength` characters.
    public static func problem(with words: [String]) -> String? {
        if words.count > maximumCount { return "at most \(maximumCount) articles (got \(words.count))" }
        for word in words {
            guard word.count <= maximumLength, SearchText.tokens(word).count == 1,
                SortText.key(word) == SearchText.tokens(word)[0]
            else {
                return "each article is one word of letters or digits, at most \(maximumLength) characters (got \"\(word)\")"
            }
        }
        return nil
    }

    public static let maximumCount = 20
    public static let maximumLength = 20
}
