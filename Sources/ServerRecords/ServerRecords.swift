// ServerRecords: what the server keeps about requests and access, apart from the album domain.
//
// The protocols a store implements for BlueLibraryServer's guards (`AccessStore` for the
// write-protection token and failed attempts, `IdempotencyStore` for `Idempotency-Key`
// requests, `SecretStore` for server secrets) and the value types they exchange. Pure values
// and protocols: no I/O, no SQL, no HTTP. Storage implements them (beside `AlbumStore`), and
// BlueLibraryServer uses them; neither has to import the other, and `Library` stays the album
// domain only.
