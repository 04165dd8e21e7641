import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Conditional GETs keep the contract.
/// - An invalid query is a 400 whatever the preconditions say (`If-None-Match: *` or a tag):
///   the query is validated before any precondition, cached page or not.
/// - A 304 carries the `Cache-Control`, `ETag` and `Vary` its 200 would (RFC 9110 §15.4.5), and
///   both carry what openapi.yaml declares for them.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ConditionalContractTests {
    static let badQueries = ["limit=0", "sort=bogus", "cursor=garbage", "limit=100000", "yearFrom=1", "offset=-1", "count=maybe",
                             "cursor=garbage&offset=1"]

    @Test func anInvalidQueryIs400WhateverThePreconditions() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }  // never started: answered in process
        let routes = InProcessClient(app)
        func get(_ path: String, _ headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
            routes.request(path: path, headers: headers)
        }
        #expect(routes.request(method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
                               body: Array(#"{"id": "all", "sources": ["default"]}"#.utf8)).status == 201)
        for list in ["/albums", "/libraries/default/albums", "/views/all/albums"] {
            // A valid page first: its tag, and the list's version known in memory.
            let valid = try get("\(list)?limit=2")
            let tag = try #require(valid.header("ETag"), "\(list)")
            #expect(try get("\(list)?limit=2", ["If-None-Match": tag]).status == 304)
            #expect(try get("\(list)?limit=2", ["If-None-Match": "*"]).status == 304)
            for query in Self.badQueries {
                for condition in ["*", tag, "\"v1-0000000000000000\", *", "W/\"x\""] {
                    // Twice: once as the first request of that query, once after it was refused.
                    for attempt in 1...2 {
                        let answer = try get("\(list)?\(query)", ["If-None-Match": condition])
                        #expect(answer.status == 400, "\(list)?\(query) If-None-Match: \(condition) (\(attempt)): \(answer.statusLine)")
                        #expect(answer.header("Content-Type") == "application/problem+json")
                    }
                }
            }
        }
        // Other reads with a query and a 304 validate first too.
        for path in ["/state?client=%00", "/changes?since=-1", "/changes?since=x", "/albums/at/x"] {
            let plain = try get(path)
            guard plain.status == 400 else { continue }  // a parameter that route does not read
            #expect(try get(path, ["If-None-Match": "*"]).status == 400, "\(path)")
        }
    }

    /// The `Cache-Control` schemas openapi.yaml declares for the 200 and the 304 of every GET:
    /// `"<template> <status>"` → schema (absent when it declares none).
    static func declaredCacheControl() throws -> [String: [String: Any]] {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../openapi.yaml").standardized.path
        let script = """
            import json, sys, yaml
            spec = yaml.safe_load(open(sys.argv[1]))
            def deref(node):
                while isinstance(node, dict) and "$ref" in node:
                    target = spec
                    for part in node["$ref"][2:].split("/"):
                        target = target[part]
                    node = target
                return node
            out = {}
            for template, item in spec["paths"].items():
                get = item.get("get")
                if not get: continue
                for status in ("200", "304"):
                    response = deref(get["responses"].get(status))
                    if not response: continue
                    header = deref((response.get("headers") or {}).get("Cache-Control"))
                    if header: out[template + " " + status] = deref(header.get("schema", {}))
            print(json.dumps(out))
            """
        let run = try ChildProcess.run("/usr/bin/env", ["python3", "-c", script, spec], environment: ProcessInfo.processInfo.environment)
        try #require(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: [String: Any]])
    }

    /// The values a declared schema allows (`enum` or `const`), or nil when it allows any string.
    static func values(_ schema: [String: Any]?) -> [String]? {
        (schema?["enum"] as? [String]) ?? (schema?["const"] as? String).map { [$0] }
    }

    /// The spec itself: where a GET declares `Cache-Control` on both its 200 and its 304, the
    /// two declarations are the same (a 304 carries what the 200 would).
    @Test func theSpecDeclaresTheSameCacheControlOnA304AsOnItsOK() throws {
        let declared = try Self.declaredCacheControl()
        var compared = 0
        for (key, notModified) in declared where key.hasSuffix(" 304") {
            let template = String(key.dropLast(4))
            guard let ok = declared["\(template) 200"] else { continue }
            compared += 1
            #expect(Self.values(ok) == Self.values(notModified),
                    "\(template): the 200 allows \(Self.values(ok) ?? ["any"]), the 304 \(Self.values(notModified) ?? ["any"])")
        }
        #expect(compared > 10)
    }

    @Test func a304CarriesTheCacheControlItsOKWouldAndTheSpecSays() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }  // never started: answered in process
        let routes = InProcessClient(app)
        func get(_ path: String, _ headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
            routes.request(path: path, headers: headers)
        }
        #expect(routes.request(method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
                               body: Array(#"{"id": "all", "sources": ["default"]}"#.utf8)).status == 201)
        let id = try #require(try get("/albums/at/0").json()["id"] as? String)
        let declared = try Self.declaredCacheControl()
        let reads: [(template: String, path: String)] = [
            ("/", "/"), ("/openapi.yaml", "/openapi.yaml"), ("/settings", "/settings"), ("/settings", "/settings?pretty"),
            ("/albums", "/albums?limit=2"), ("/albums/{id}", "/albums/\(id)"), ("/albums/at/{index}", "/albums/at/0"),
            ("/albums/{id}/table", "/albums/\(id)/table"), ("/libraries", "/libraries"), ("/libraries/{lib}", "/libraries/default"),
            ("/libraries/{lib}/albums", "/libraries/default/albums?limit=2"), ("/views", "/views"), ("/views/{view}", "/views/all"),
            ("/views/{view}/albums", "/views/all/albums?limit=2"), ("/undo", "/undo"), ("/state", "/state"),
            ("/changes", "/changes?since=0"), ("/app/", "/app/"), ("/app/{file}", "/app/main.js"), ("/docs/", "/docs/"),
            ("/docs/{file}", "/docs/docs.css"),
        ]
        for (template, path) in reads {
            let ok = try get(path)
            try #require(ok.status == 200, "\(path): \(ok.statusLine)")
            let tag = try #require(ok.header("ETag"), "\(path) has no ETag")
            let notModified = try get(path, ["If-None-Match": tag])
            #expect(notModified.status == 304, "\(path): \(notModified.statusLine)")
            for name in ["Cache-Control", "ETag", "Vary"] {
                #expect(notModified.header(name) == ok.header(name), "\(path): \(name) is \(ok.header(name) ?? "absent") on 200, \(notModified.header(name) ?? "absent") on 304")
            }
            #expect(ok.header("Cache-Control") != nil, "\(path) says nothing about caching")
            for (status, response) in [("200", ok), ("304", notModified)] {
                guard let values = Self.values(declared["\(template) \(status)"]) else { continue }
                #expect(values.contains(response.header("Cache-Control") ?? "absent"),
                        "\(path) \(status): Cache-Control \(response.header("Cache-Control") ?? "absent"), the spec says \(values)")
            }
            #expect(declared["\(template) 304"] != nil, "\(template): the spec's 304 declares no Cache-Control")
        }
    }
}
