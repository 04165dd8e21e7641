/// The bounds of libraries, views and list filters, as the server enforces them and
/// `openapi.yaml` states them (`WireSchema` carries them to `WireSchemaTests`).
public enum CatalogLimits {
    /// A library or view id: 1 to 40 of `a-z`, `0-9` and `-`.
    public static let idLength = 1...40
    /// A library's or view's display name: 1 to 200 characters once trimmed.
    public static let nameLength = 1...200
    /// A view shows 1 to 32 libraries.
    public static let viewSources = 1...32
    /// The text filters (`q`, `artist`, `genre`): at most 500 characters.
    public static let filterTextLength = 500
    /// The years a view's filter may name (`yearFrom`, `yearTo`): wider than an album's 1000 to
    /// 9999, as views have always accepted (a list's query takes an album's).
    public static let filterYears = 0...9999

    /// Why `text` is not a valid library or view id (a phrase after "library"/"view"), or nil
    /// when it is: 1 to 40 bytes of `a-z`, `0-9` and `-`.
    public static func idProblem(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard idLength.contains(bytes.count) else {
            return "ids are 1 to \(idLength.upperBound) characters (got \(bytes.count))"
        }
        let allowed = bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-")
        }
        guard allowed else {
            return "ids use only lowercase letters a-z, digits 0-9 and '-' (got \"\(text.prefix(60))\")"
        }
        return nil
    }
}
