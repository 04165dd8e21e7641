import HTTPServer
import Library

/// Delivers the cover fetcher's `cover.loaded` / `cover.failed` (the tutorial's
/// `BLDownloadImageNotification`) to `GET /events` subscribers.
struct CoverEventForwarder: CoverEventSink {
    let hub: EventHub

    func publish(_ event: CoverEvent) {
        var json = JSONWriter()
        json.beginObject()
        json.key("coverUrl"); json.string(event.url)
        switch event {
        case let .loaded(_, cover):
            json.key("mediaType"); json.string(cover.mediaType)
            json.key("length"); json.number(cover.length)
            json.key("etag"); json.string(cover.etag)
        case let .failed(_, error):
            json.key("reason"); json.string(error.reason.rawValue)
            json.key("detail"); json.string(error.detail)
            if let status = error.upstreamStatus {
                json.key("upstreamStatus"); json.number(status)
            }
        }
        json.endObject()
        hub.publish(name: event.name, json: String(decoding: json.bytes, as: UTF8.self))
    }
}
