import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Testing

@testable import BlueLibraryServer

/// Every route's real answers validate against the response schemas in `openapi.yaml`
/// (checked by `jsonschema`, Draft 2020-12, as OpenAPI 3.1 uses).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ResponseSchemaTests {
    struct Sample {
        var method: String
        var template: String
        var path: String
        var status: Int
        var contentType: String
        var body: String?
    }

    static let validator = #"""
import json, sys, yaml, jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

spec = yaml.safe_load(open(sys.argv[1]))
samples = json.load(open(sys.argv[2]))
registry = Registry().with_resource("urn:spec", Resource(contents=spec, specification=DRAFT202012))

def deref(node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target = spec
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node

def rewrite(node):
    # Make local refs absolute so they resolve against the whole spec.
    if isinstance(node, dict):
        return {k: ("urn:spec" + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else rewrite(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [rewrite(v) for v in node]
    return node

failures = 0
for s in samples:
    where = "%s %s (%s) -> %s %s" % (s["method"], s["template"], s["path"], s["status"], s["contentType"])
    operation = spec["paths"].get(s["template"], {}).get(s["method"].lower())
    if operation is None:
        print("NO OPERATION:", where); failures += 1; continue
    responses = operation.get("responses", {})
    response = responses.get(str(s["status"])) or responses.get("default")
    if response is None:
        print("STATUS NOT IN SPEC:", where); failures += 1; continue
    response = deref(response)
    content = response.get("content")
    if not content:
        if s["body"]:
            print("BODY BUT SPEC HAS NO CONTENT:", where)
            failures += 1
        continue
    media = s["contentType"].split(";")[0].strip().lower()
    candidates = [k for k in content if k.split(";")[0].strip().lower() == media]
    if not candidates:
        print("MEDIA TYPE NOT IN SPEC:", where, "spec has", list(content)); failures += 1; continue
    mediaObject = deref(content[candidates[0]])
    schema = mediaObject.get("schema")
    if schema is None or s["body"] is None or not (media.endswith("json")):
        continue
    try:
        body = json.loads(s["body"])
    except ValueError as e:
        print("BODY IS NOT JSON:", where, e); failures += 1; continue
    validator = jsonschema.Draft202012Validator(rewrite(schema), registry=registry)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    for e in errors:
        print("MISMATCH:", where, "at", "/".join(map(str, e.absolute_path)) or "<root>", ":", e.message[:300])
    failures += len(errors)
print("checked %d responses, %d problems" % (len(samples), failures))
sys.exit(1 if failures else 0)
"""#

    @Test func responsesMatchTheSpec() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        var samples: [Sample] = []

        @discardableResult
        func call(_ method: String, _ template: String, _ path: String, json: String? = nil, body: String? = nil,
                  contentType: String? = nil, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
            var allHeaders = headers
            if let json { allHeaders["Content-Type"] = "application/json"; _ = json }
            if let contentType { allHeaders["Content-Type"] = contentType }
            let response = try RawHTTPClient.request(port: port, method: method, path: path, headers: allHeaders,
                                                     body: Array((json ?? body ?? "").utf8))
            let type = response.header("Content-Type") ?? ""
            samples.append(Sample(method: method, template: template, path: path, status: response.status, contentType: type,
                                  body: response.body.isEmpty ? nil : (type.contains("json") ? response.text : nil)))
            return response
        }

        try call("GET", "/", "/")
        try call("GET", "/healthz", "/healthz")
        try call("GET", "/readyz", "/readyz")
        try call("GET", "/openapi.yaml", "/openapi.yaml")
        try call("GET", "/metrics", "/metrics")
        try call("GET", "/albums", "/albums")
        try call("GET", "/albums", "/albums?limit=1")
        try call("GET", "/albums", "/albums?limit=-5")
        let created = try call("POST", "/albums", "/albums", json: #"{"title": "Schema", "artist": "Checker", "year": "2001"}"#)
        let id = try #require(try created.json()["id"] as? String)
        try call("POST", "/albums", "/albums", json: #"{"artist": 5}"#)
        try call("GET", "/albums/{id}", "/albums/\(id)")
        try call("GET", "/albums/{id}", "/albums/NOPE")
        try call("PATCH", "/albums/{id}", "/albums/\(id)", body: #"{"genre": "Jazz"}"#, contentType: "application/merge-patch+json")
        try call("GET", "/albums/{id}/table", "/albums/\(id)/table")
        try call("POST", "/albums/{id}/move", "/albums/\(id)/move", json: #"{"index": 0}"#)
        try call("POST", "/albums/{id}/move", "/albums/\(id)/move", json: #"{"index": 999}"#)
        try call("GET", "/albums/{id}/cover", "/albums/\(id)/cover")
        try call("DELETE", "/albums/{id}/cover", "/albums/\(id)/cover")
        try call("GET", "/albums/at/{index}", "/albums/at/0")
        try call("GET", "/albums/at/{index}", "/albums/at/999")
        try call("GET", "/undo", "/undo")
        try call("POST", "/undo", "/undo")
        try call("DELETE", "/albums/at/{index}", "/albums/at/0")
        try call("DELETE", "/albums/{id}", "/albums/\(id)")
        try call("GET", "/state", "/state")
        try call("PUT", "/state", "/state", json: #"{"currentAlbumIndex": 1}"#)
        let archive = try call("GET", "/archive", "/archive")
        try call("PUT", "/archive", "/archive", json: archive.text)
        try call("POST", "/api/addAlbum", "/api/addAlbum", json: #"{"title": "Tutorial", "artist": "App"}"#)
        try call("POST", "/api/deleteAlbum", "/api/deleteAlbum", body: "0", contentType: "text/plain")
        try call("GET", "/changes", "/changes?since=0")
        try call("GET", "/changes", "/changes?since=999999")
        try call("GET", "/settings", "/settings")
        try call("PATCH", "/settings", "/settings", body: #"{"access": {"attemptLimit": 6}}"#, contentType: "application/merge-patch+json")
        try call("PATCH", "/settings", "/settings", body: #"{"nope": 1}"#, contentType: "application/merge-patch+json")

        // /events: just the head.
        let events = try SSEClient(port: port)
        samples.append(Sample(method: "GET", template: "/events", path: "/events", status: events.head.status,
                              contentType: events.head.header("Content-Type") ?? "", body: nil))

        let directory = TestApp.temporaryDirectory()
        let samplesPath = directory + "/samples.json"
        let json = samples.map { sample -> [String: Any] in
            ["method": sample.method, "template": sample.template, "path": sample.path, "status": sample.status,
             "contentType": sample.contentType, "body": sample.body ?? NSNull()]
        }
        try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted]).write(to: URL(fileURLWithPath: samplesPath))
        let specPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../openapi.yaml").standardized.path

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.validator, specPath, samplesPath]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        print(text)
    }
}
