import Essentials

extension Album {
    /// Appends the album's JSON object to `buffer`: the same keys, order and values as its
    /// `Codable` form, written by hand for the streaming export (no `JSONEncoder` per album).
    public func appendJSON(to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        JSONBytes.appendKey("id", to: &buffer)
        JSONString.append(id.rawValue, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("title", to: &buffer)
        JSONString.append(title, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("artist", to: &buffer)
        JSONString.append(artist, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("genre", to: &buffer)
        JSONString.append(genre, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("year", to: &buffer)
        JSONBytes.appendRaw(year.map(String.init) ?? "null", to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("coverUrl", to: &buffer)
        JSONString.append(coverUrl, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("createdAt", to: &buffer)
        Timestamp.appendQuoted(createdAt, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("updatedAt", to: &buffer)
        Timestamp.appendQuoted(updatedAt, to: &buffer)
        buffer.append(UInt8(ascii: "}"))
    }
}
