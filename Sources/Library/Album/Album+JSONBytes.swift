extension Album {
    /// Appends the album's JSON object to `buffer`: the same keys, order and values as its
    /// `Codable` form, written by hand for the streaming export (no `JSONEncoder` per album).
    public func appendJSON(to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        JSONBytes.appendKey("id", to: &buffer)
        JSONBytes.appendString(id.rawValue, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("title", to: &buffer)
        JSONBytes.appendString(title, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("artist", to: &buffer)
        JSONBytes.appendString(artist, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("genre", to: &buffer)
        JSONBytes.appendString(genre, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("year", to: &buffer)
        JSONBytes.appendRaw(year.map(String.init) ?? "null", to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("coverUrl", to: &buffer)
        JSONBytes.appendOptionalString(coverUrl, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("createdAt", to: &buffer)
        JSONBytes.appendString(Timestamp.format(createdAt), to: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONBytes.appendKey("updatedAt", to: &buffer)
        JSONBytes.appendString(Timestamp.format(updatedAt), to: &buffer)
        buffer.append(UInt8(ascii: "}"))
    }
}
