import BlueLibraryAPI
import HTTPServer
import Library

/// The tutorial app's remote calls (`HTTPClient postRequest:@"/api/addAlbum"` and
/// `@"/api/deleteAlbum"`), so the original app works against this server unchanged.
struct TutorialRoutes {
    let facade: LibraryFacade
    let albums: AlbumRoutes

    func register(into routes: inout RouterBuilder) {
        routes.add(.post, "/api/addAlbum", options: .workerPool) { request, context in
            try RequestInput.requireJSON(request)
            return try albums.idempotency.run(request, context: context) {
                let add = try AlbumAddRequest.decode(json: request.body)
                let created = try facade.add(add.input, at: add.index)
                return try albums.created201(created, request: request, context: context)
            }
        }
        routes.add(.post, "/api/deleteAlbum", options: .workerPool) { request, _ in
            // The app posted the bare index; curl -d sends it as a form. JSON works too.
            let type = RequestInput.mediaType(of: request)
            guard type == nil || ["text/plain", "application/json", "application/x-www-form-urlencoded"].contains(type!) else {
                throw HTTPError(.unsupportedMediaType,
                                detail: "Send the index as text/plain (e.g. 2) or application/json ({\"index\": 2}).")
            }
            var body = request.body
            if type == "application/x-www-form-urlencoded", let form = FormBody.value(of: "index", in: body) {
                body = Array(form.utf8)  // index=2 from an HTML form or curl -d index=2
            }
            let index = try IndexRequest.decode(json: body, allowPlainText: true)
            guard let index else {
                throw HTTPError(.unprocessableContent, detail: "The body must name the index to delete, e.g. 2 or {\"index\": 2}.",
                                errors: [.init(field: "index", message: "index is required")])
            }
            let removed = try facade.delete(at: index)
            return try albums.deleted(removed, request: request)
        }
    }
}

/// `application/x-www-form-urlencoded` bodies (`index=2`).
enum FormBody {
    static func value(of name: String, in body: [UInt8]) -> String? {
        let request = HTTPRequest(method: .post, target: "/?" + String(decoding: body, as: UTF8.self))
        return request.query(name)
    }
}
