#!/usr/bin/env python3
"""Checks the rules openapi.yaml keeps for every operation, as the server enforces them.

Usage: check-spec-rules.py OPENAPI_YAML (OPEN_PATH | 'METHOD /path=SCOPE')...

OPEN_PATH are the paths the server never protects for reads (AccessPolicy: exact paths, or
`/prefix/*` for a mount and everything under it); 'METHOD /path=SCOPE' is AccessPolicy's rule
for every other operation (`GET /albums=read`). Every operation must declare `security`: `[]`
on an open path (and then no 401/403/429), else `[{}, {bearer: [SCOPE]}]` (open while the lock
is off, a key with the scope once it is on) with 401, 403 and 429 responses, and every
operation of the spec must have a rule and every rule an operation; every operation with a request body
must list 415. Every integer a client sends (a query or path parameter, a member of a JSON
request body) states its `minimum` and `maximum`, so generators and fuzzers see the range the
server keeps (SpecBoundsTests checks the server against them). Every `/libraries/{lib}/...`
copy (`x-same-as`) is its bare route with only the differences
scripts/openapi-library-copies.py makes (operation id, tags, `LibraryId`, a 404), event
schemas and all. Prints one line per problem; exits 1 if there was any. Run by
Tests/BlueLibraryServerTests/OpenAPISpecTests.swift.
"""
import copy
import sys
import yaml

import openapi_refs

spec = yaml.safe_load(open(sys.argv[1]))
open_paths = [a for a in sys.argv[2:] if '=' not in a]
rules = dict(a.rsplit('=', 1) for a in sys.argv[2:] if '=' in a)


def is_open(path):
    return any(path == p or (p.endswith('/*') and (path == p[:-2] or path.startswith(p[:-1]))) for p in open_paths)


problems = []
for path, item in spec['paths'].items():
    for method, operation in item.items():
        if method not in ('get', 'put', 'post', 'delete', 'patch', 'head', 'options'):
            continue
        where = '%s %s' % (method.upper(), path)
        security = operation.get('security')
        responses = {str(code) for code in operation.get('responses', {})}
        if is_open(path) and method in ('get', 'head', 'options'):
            if security != []:
                problems.append('%s: an open path declares `security: []` (has %r)' % (where, security))
            if {'401', '403', '429'} & responses:
                problems.append('%s: an open path answers no 401/403/429' % where)
        else:
            scope = rules.pop(where, None)
            if scope is None:
                problems.append('%s: the server has no access rule for it (AccessPolicy.rules)' % where)
            elif security != [{}, {'bearer': [scope]}]:
                problems.append('%s: declares `security: [{}, {bearer: [%s]}]` as the server enforces (has %r)' % (where, scope, security))
            for code in ('401', '403', '429'):
                if code not in responses:
                    problems.append('%s: lists %s (the lock can answer it)' % (where, code))
        if 'requestBody' in operation and '415' not in responses:
            problems.append('%s: reads a body, so lists 415' % where)

for where in sorted(rules):
    problems.append('%s: AccessPolicy has a rule for it, the spec no operation' % where)

def deref(node):
    return openapi_refs.deref(spec, node)


def branches(schema):
    return openapi_refs.branches(spec, schema)


def integer_members(schema, prefix=''):
    """(name, schema) of every integer member of an object schema, nested objects too."""
    out = []
    for branch in branches(schema):
        for name, member in (branch.get('properties') or {}).items():
            for b in branches(member):
                kind = b.get('type')
                kinds = kind if isinstance(kind, list) else [kind]
                if 'integer' in kinds:
                    out.append((prefix + name, b))
                elif 'object' in kinds and b.get('properties'):
                    out += integer_members(b, prefix + name + '.')
    return out


for path, method, operation, parameters in openapi_refs.bare_operations(spec):
    where = '%s %s' % (method, path)
    for parameter in parameters:
        for b in branches(parameter.get('schema', {})):
            if b.get('type') == 'integer' and 'enum' not in b and not ('minimum' in b and 'maximum' in b):
                problems.append('%s: the integer parameter %s states its minimum and maximum' % (where, parameter['name']))
    body = deref(operation.get('requestBody') or {})
    for media, content in (body.get('content') or {}).items():
        if media.endswith('json'):
            for name, b in integer_members(content.get('schema', {})):
                if 'enum' not in b and 'const' not in b and not ('minimum' in b and 'maximum' in b):
                    problems.append('%s: the integer %s of its %s body states its minimum and maximum' % (where, name, media))


def as_copy(path, item):
    """The bare route's path item as openapi-library-copies.py copies it, without what the
    copy adds at the path level."""
    item = copy.deepcopy(item)
    for method, operation in item.items():
        if not isinstance(operation, dict) or method not in ('get', 'put', 'post', 'delete', 'patch'):
            continue
        operation['operationId'] = operation.get('operationId', '') + 'InLibrary'
        operation['tags'] = operation.get('tags', []) + ['libraries']
        responses = operation.setdefault('responses', {})
        responses.setdefault('404', {'$ref': '#/components/responses/LibraryNotFound'})
    item['parameters'] = [{'$ref': '#/components/parameters/LibraryId'}] + item.get('parameters', [])
    return item


for path, item in spec['paths'].items():
    original = item.get('x-same-as')
    if original is None:
        continue
    if original not in spec['paths'] or path != '/libraries/{lib}' + original:
        problems.append('%s: x-same-as %s names no bare route it copies' % (path, original))
        continue
    mine = {k: v for k, v in item.items() if k not in ('x-same-as', 'summary', 'description')}
    expected = as_copy(original, spec['paths'][original])
    for method in sorted(set(mine) | set(expected)):
        if mine.get(method) != expected.get(method):
            problems.append('%s: %s differs from %s (run scripts/openapi-library-copies.py)' % (path, method, original))
    events = lambda i: ((i.get('get') or {}).get('responses', {}).get('200') or {}).get('x-event-schemas')
    if events(spec['paths'][original]) and events(item) != events(spec['paths'][original]):
        problems.append('%s: its events have not the schemas of %s' % (path, original))

for problem in problems:
    print(problem)
print('%d problems' % len(problems))
sys.exit(1 if problems else 0)
