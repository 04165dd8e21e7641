#!/usr/bin/env python3
"""Lists the integer bounds openapi.yaml states for what clients send, as JSON.

Usage: spec-bounds.py OPENAPI_YAML

Prints {"parameters": [...], "fields": [...]}: every query or path parameter of type integer
with a `minimum` or `maximum` ({"method", "path", "name", "in", "minimum", "maximum"}: the
bounds as decimal strings, or null), and
every integer member of a JSON request body with one ({"method", "path", "mediaType",
"field" (dotted for a nested object: `filter.yearFrom`), "minimum", "maximum"}), over the
hand-written routes (the /libraries/{lib} copies are the same). A member that may also be
something else (a year as an integer or a 4-digit string) counts by its integer branch.
Tests/BlueLibraryServerTests/SpecBoundsTests.swift sends each bound and one past it to the
server and expects it accepted and refused.
"""
import json
import sys

import yaml

import openapi_refs

spec = yaml.safe_load(open(sys.argv[1]))


def deref(node):
    return openapi_refs.deref(spec, node)


def branches(schema):
    return openapi_refs.branches(spec, schema)


def types(schema):
    kind = schema.get('type')
    return kind if isinstance(kind, list) else [kind]


def bounded(schema):
    return next((b for b in branches(schema) if 'integer' in types(b) and ('minimum' in b or 'maximum' in b)), None)


def fields(schema, prefix=''):
    out = []
    for branch in branches(schema):
        for name, member in (branch.get('properties') or {}).items():
            integer = bounded(member)
            if integer is not None:
                out.append((prefix + name, integer))
                continue
            if any('object' in types(b) and b.get('properties') for b in branches(member)):
                out += fields(member, prefix + name + '.')
    return out


def text(bound):
    """A bound as decimal text (exact for 64-bit bounds, whatever reads the JSON), or None."""
    return None if bound is None else str(bound)


parameters, body_fields = [], []
for path, method, operation, operation_parameters in openapi_refs.bare_operations(spec):
    for parameter in operation_parameters:
        integer = bounded(parameter.get('schema', {}))
        if parameter['in'] in ('query', 'path') and integer is not None:
            parameters.append({'method': method, 'path': path, 'name': parameter['name'], 'in': parameter['in'],
                               'minimum': text(integer.get('minimum')), 'maximum': text(integer.get('maximum'))})
    body = deref(operation.get('requestBody') or {})
    for media, content in (body.get('content') or {}).items():
        if not media.endswith('json'):
            continue
        seen = set()
        for name, integer in fields(content.get('schema', {})):
            if name in seen:
                continue
            seen.add(name)
            body_fields.append({'method': method, 'path': path, 'mediaType': media, 'field': name,
                                'minimum': text(integer.get('minimum')), 'maximum': text(integer.get('maximum'))})
print(json.dumps({'parameters': parameters, 'fields': body_fields}, indent=1))
