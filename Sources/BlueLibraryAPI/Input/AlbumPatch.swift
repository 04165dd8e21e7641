import Foundation

/// What a merge patch does to one field.
public enum PatchField<Value: Sendable & Equatable>: Sendable, Equatable {
    /// The key was absent: keep the current value.
    case unchanged
    /// The key had a value: replace.
    case set(Value)
    /// The key was `null`: clear an optional field (`genre` goes back to "Pop").
    case remove
}

/// A JSON merge patch of an album's user fields (RFC 7396,
/// <https://www.rfc-editor.org/rfc/rfc7396>).
///
/// RFC 7396 §2: "If the provided merge patch contains members that do not appear within the
/// target, those members are added … [a] null value … remove[s] the member". Our album has a
/// fixed shape, so: a present key replaces the field, `null` clears an optional field
/// (`year`, `coverUrl`; `genre` returns to its default "Pop"), `null` for `title`/`artist` is
/// an error because an album cannot lack them, and unknown keys are rejected.
public struct AlbumPatch: Sendable, Equatable {
    public var title: PatchField<String>
    public var artist: PatchField<String>
    public var genre: PatchField<String>
    public var year: PatchField<Int>
    public var coverUrl: PatchField<String>

    public init(
        title: PatchField<String> = .unchanged, artist: PatchField<String> = .unchanged,
        genre: PatchField<String> = .unchanged, year: PatchField<Int> = .unchanged,
        coverUrl: PatchField<String> = .unchanged
    ) {
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
    }

    /// True when the patch names no field (`{}`).
    public var isEmpty: Bool {
        self == AlbumPatch()
    }

    /// The album's fields after the patch, validated as a whole.
    ///
    /// - Throws: `ValidationFailure` for every field the patch makes invalid (e.g. removing
    ///   `title`, or a year out of range).
    public func applied(to current: AlbumInput) throws(ValidationFailure) -> AlbumInput {
        var errors: [FieldError] = []
        func required(_ key: String, _ change: PatchField<String>, _ value: String) -> String {
            switch change {
            case .unchanged: return value
            case .set(let new): return new
            case .remove:
                errors.append(FieldError(field: key, message: "\(key) cannot be removed; send a new non-empty string instead"))
                return value
            }
        }
        let title = required("title", title, current.title)
        let artist = required("artist", artist, current.artist)
        let genre = Self.apply(genre, to: current.genre) ?? AlbumFieldLimits.defaultGenre
        let year = Self.apply(year, to: current.year)
        let coverUrl = Self.apply(coverUrl, to: current.coverUrl)
        let result: AlbumInput
        do {
            result = try AlbumInput(title: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl)
        } catch {
            throw ValidationFailure(errors + error.errors)
        }
        guard errors.isEmpty else { throw ValidationFailure(errors) }
        return result
    }

    private static func apply<Value>(_ change: PatchField<Value>, to value: Value?) -> Value? {
        switch change {
        case .unchanged: return value
        case .set(let new): return new
        case .remove: return nil
        }
    }
}
