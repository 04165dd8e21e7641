#!/usr/bin/env python3
"""Checks recorded HTTP responses against the response schemas of an OpenAPI 3.1 spec.

Usage: check-response-schema.py OPENAPI_YAML SAMPLES_JSON

SAMPLES_JSON is a list of {"method", "template" (the spec's path template), "path", "status",
"contentType", "body" (the JSON text, or null)}. Every sample's operation, status and media
type must be in the spec, and a JSON body must validate against its schema (jsonschema,
Draft 2020-12, as OpenAPI 3.1 uses). A sample {"event", "data", "template"} is one
Server-Sent Event of the stream `template` (GET /events when absent, or its
/libraries/{lib}/events copy): its name must be in the `x-event-schemas` of that operation's
200 response and its data (JSON) must validate against the schema named there. Prints one line per problem and a summary; exits 1 if
there was any problem. Run by Tests/BlueLibraryServerTests/ResponseSchemaTests.swift;
scripts/test installs the Python modules it needs (PyYAML, jsonschema, referencing).
"""
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
def event_schemas(template):
    response = deref(spec["paths"].get(template, {}).get("get", {}).get("responses", {}).get("200", {}))
    return response.get("x-event-schemas") or {}

for s in samples:
    if "event" in s:
        template = s.get("template", "/events")
        where = "event %s of %s %s" % (s["event"], template, s["data"][:200])
        schema = event_schemas(template).get(s["event"])
        if schema is None:
            print("EVENT NOT IN SPEC:", where); failures += 1; continue
        try:
            data = json.loads(s["data"])
        except ValueError as e:
            print("EVENT DATA IS NOT JSON:", where, e); failures += 1; continue
        validator = jsonschema.Draft202012Validator(rewrite(schema), registry=registry)
        for e in validator.iter_errors(data):
            print("MISMATCH:", where, "at", "/".join(map(str, e.absolute_path)) or "<root>", ":", e.message[:300])
            failures += 1
        continue
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
