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
}
