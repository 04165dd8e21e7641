import Foundation

/// How search sees text: one folding and one tokenizer, applied alike to what albums say
/// (their stored `search_text`) and to what a client asks (`q`), so every store answers a
/// query the same way whatever the engine, and a client's offline replica as the server does.
///
/// Folding (``fold(_:)``): compatibility decomposition (NFKD: ligatures, full-width and
/// super-script forms become plain letters), combining marks removed, lower case, then the
/// letters search engines fold by hand because no decomposition reaches them (ß → ss, æ → ae,
/// ø → o, œ → oe, ł → l, đ/ð → d, þ → th, ı → i, final ς → σ). So "Björk" → "bjork",
/// "Sigur Rós" → "sigur ros", "Виктор Цой" → "виктор цой", "İbrahim" → "ibrahim",
/// "Straße" → "strasse".
///
/// Tokens (``tokens(_:)``): the folded text's runs of letters and digits (Unicode categories
/// L and N); everything else separates them. "AC/DC" is `ac dc`, "Sinéad O'Connor" is
/// `sinead o connor`; a run of Han or Kana characters is one token.
public enum SearchText {
    /// `text` folded for comparison (see the type's description).
    public static func fold(_ text: String) -> String {
        var folded = String.UnicodeScalarView()
        for scalar in text.decomposedStringWithCompatibilityMapping.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark: continue
            default: break
            }
            for lower in scalar.properties.lowercaseMapping.unicodeScalars {
                if let replacement = replacements[lower] {
                    folded.append(contentsOf: replacement.unicodeScalars)
                } else {
                    folded.append(lower)
                }
            }
        }
        return String(folded)
    }

    /// The letters no decomposition folds, as search engines fold them.
    private static let replacements: [Unicode.Scalar: String] = [
        "ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i", "ς": "σ",
        "ħ": "h", "ŧ": "t", "ŀ": "l", "ĸ": "k",
    ]

    /// The longest token, in UTF-8 bytes: a longer run keeps its first scalars up to this (both
    /// in what albums say and in what a query asks, so they still meet). PostgreSQL's search
    /// index refuses a lexeme of more than 2,047 bytes, and 500 characters of a title can
    /// decompose to more (one character of "㍿" is 12 bytes folded).
    public static let maximumTokenBytes = 255

    /// The tokens of `text`, folded, in order.
    public static func tokens(_ text: String) -> [String] {
        tokensOfAnyLength(text).map(cut)
    }

    private static func cut(_ token: String) -> String {
        guard token.utf8.count > maximumTokenBytes else { return token }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in token.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maximumTokenBytes { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    private static func tokensOfAnyLength(_ text: String) -> [String] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return asciiTokens(text) }
        var tokens: [String] = []
        var current = String.UnicodeScalarView()
        for scalar in fold(text).unicodeScalars {
            if isTokenScalar(scalar) {
                current.append(scalar)
            } else if !current.isEmpty {
                tokens.append(String(current))
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { tokens.append(String(current)) }
        return tokens
    }

    /// `tokens` of ASCII text (most of what albums say), without decomposing it: the same
    /// result, letters lowered and digits kept, everything else a separator.
    private static func asciiTokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var current: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): current.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): current.append(byte | 0x20)
            default:
                if !current.isEmpty {
                    tokens.append(String(decoding: current, as: UTF8.self))
                    current.removeAll(keepingCapacity: true)
                }
            }
        }
        if !current.isEmpty { tokens.append(String(decoding: current, as: UTF8.self)) }
        return tokens
    }

    private static func isTokenScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .decimalNumber, .letterNumber, .otherNumber:
            true
        default:
            false
        }
    }

    /// What an album is found by (the stored `search_text`): the tokens of its title, then
    /// ``artistMark``, the artist's tokens, ``genreMark``, the genre's tokens, all separated by
    /// single spaces ("the dark side of the moon | pink floyd / rock"). The marks are no token
    /// (tokens are letters and digits), so nothing a query asks matches them, a phrase never
    /// runs from one field into the next, and a store tells the title and artist (before
    /// ``genreMark``) from the genre, for relevance (`SearchQuery.rank`).
    public static func document(title: String, artist: String, genre: String) -> String {
        (tokens(title) + [artistMark] + tokens(artist) + [genreMark] + tokens(genre)).joined(separator: " ")
    }

    /// The mark before the artist's tokens in a document.
    public static let artistMark = "|"
    /// The mark before the genre's tokens in a document.
    public static let genreMark = "/"
}

/// A search (`q`): its words, folded. An album matches when its title, artist or genre (in any
/// order, across fields) has each word as a whole token, and the last word as the start of a
/// token, so a search box can search as the user types ("pink flo" finds Pink Floyd). Words in
/// double quotes are a phrase: a match has them one after another, in that order, as whole
/// tokens (`"dark side" moon`); a quote left open runs to the end. Nothing else a user types is
/// an operator: `*`, `-`, `:`, `NEAR` are separators or words.
public struct SearchQuery: Sendable, Hashable {
    /// The words every match has as whole tokens: those outside quotes but the last, and each
    /// quoted single word.
    public let words: [String]
    /// The quoted runs of two or more words a match has one after another.
    public let phrases: [[String]]
    /// The last word, when it stands outside quotes: a match has a token that starts with it.
    public let prefix: String?
    /// Every word in the order typed (quotes left out), the prefix last when there is one: what
    /// `rank` looks for as a phrase.
    public let sequence: [String]

    /// The query of `text`; nil when it has no letter or digit to search for.
    public init?(_ text: String) {
        var outside: [String] = []
        var quoted: [String] = []
        var phrases: [[String]] = []
        var endsOutside = false
        var sequence: [String] = []
        // Between quotes: the odd parts (a quote left open makes the last part odd too).
        for (index, part) in text.split(separator: "\"", omittingEmptySubsequences: false).enumerated() {
            let tokens = SearchText.tokens(String(part))
            guard !tokens.isEmpty else { continue }
            sequence += tokens
            if index.isMultiple(of: 2) {
                outside += tokens
            } else if tokens.count == 1 {
                quoted += tokens
            } else {
                phrases.append(tokens)
            }
            endsOutside = index.isMultiple(of: 2)
        }
        prefix = endsOutside ? outside.last : nil
        words = (endsOutside ? Array(outside.dropLast()) : outside) + quoted
        self.phrases = phrases
        self.sequence = sequence
        if prefix == nil && words.isEmpty && phrases.isEmpty { return nil }
    }

    /// Whether an album whose stored document is `document` matches. Compared as UTF-8 bytes,
    /// as the stores' SQL compares them.
    public func matches(document: String) -> Bool {
        Self.matches(tokens: document.utf8.split(separator: UInt8(ascii: " ")), words: words, phrases: phrases, prefix: prefix)
    }

    /// How well an album whose stored document is `document` matches (it must match), as
    /// `sort=relevance` orders: 0 (best) to 7, the sum of
    /// - 4 unless every word, phrase and the prefix is in the title or the artist (before
    ///   `SearchText.genreMark`): title and artist matches before genre;
    /// - 2 when the prefix is no whole word of the album (only the start of one): whole words
    ///   before prefixes;
    /// - 1 unless the title or the artist has every word in the order typed, one after another
    ///   (the last as the start of a word when it is the prefix): the exact phrase first.
    /// Compared as UTF-8 bytes, as the stores' SQL compares them (`PagingQuery.rank`).
    public func rank(document: String) -> Int {
        let tokens = document.utf8.split(separator: UInt8(ascii: " "))
        let name = tokens.prefix { !$0.elementsEqual(SearchText.genreMark.utf8) }
        var rank = 0
        if !Self.matches(tokens: Array(name), words: words, phrases: phrases, prefix: prefix) { rank += 4 }
        if let prefix, !tokens.contains(where: { $0.elementsEqual(prefix.utf8) }) { rank += 2 }
        let run = Array(name)
        let phrase = run.indices.contains { start in
            guard start + sequence.count <= run.count else { return false }
            return zip(run[start..<start + sequence.count], sequence).enumerated().allSatisfy { offset, pair in
                offset == sequence.count - 1 && prefix != nil ? pair.0.starts(with: pair.1.utf8) : pair.0.elementsEqual(pair.1.utf8)
            }
        }
        if !phrase { rank += 1 }
        return rank
    }

    /// The ranks `rank` gives, best first.
    public static let ranks = 0...7

    /// The ranks an album can have in this query, best first: never 4 or 6 (the phrase of every
    /// word in the title or artist puts every word there), 2, 3, 6 and 7 only with a prefix,
    /// and for a query of one word the phrase follows from the title or artist (0, 2, 5, 7).
    public var possibleRanks: [Int] {
        Self.ranks.filter { rank in
            let (notInName, notWhole, notPhrase) = (rank & 4 != 0, rank & 2 != 0, rank & 1 != 0)
            if notInName && !notPhrase { return false }
            if notWhole && prefix == nil { return false }
            if sequence.count == 1 && notInName != notPhrase { return false }
            return true
        }
    }

    /// Whether albums of `rank` have the prefix as a whole word (every rank without one).
    public static func hasWholePrefix(_ rank: Int) -> Bool { rank & 2 == 0 }

    /// Whether albums of `rank` have every word in the title or the artist.
    public static func isInName(_ rank: Int) -> Bool { rank & 4 == 0 }

    private static func matches(
        tokens: [Substring.UTF8View], words: [String], phrases: [[String]], prefix: String?
    ) -> Bool {
        for word in words where !tokens.contains(where: { $0.elementsEqual(word.utf8) }) { return false }
        for phrase in phrases {
            let found = tokens.indices.contains { start in
                start + phrase.count <= tokens.count
                    && zip(tokens[start..<start + phrase.count], phrase).allSatisfy { $0.elementsEqual($1.utf8) }
            }
            if !found { return false }
        }
        guard let prefix else { return true }
        return tokens.contains { $0.starts(with: prefix.utf8) }
    }
}
