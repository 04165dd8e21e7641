#!/usr/bin/env python3
"""Checks the rules openapi.yaml keeps for every operation, as the server enforces them.

Usage: check-spec-rules.py OPENAPI_YAML OPEN_PATH...

OPEN_PATH are the paths the server never protects (AccessGuard: exact paths, or `/prefix/*`
for a mount and everything under it). Every operation must declare `security`: `[]` on an
open path (and then no 401/429), else `[{}, {bearer: []}]` (open while the lock is off, the
bearer token once it is on) with 401 and 429 responses; every operation with a request body
must list 415. Prints one line per problem; exits 1 if there was any. Run by
Tests/BlueLibraryServerTests/OpenAPISpecTests.swift.
"""
import sys
import yaml

spec = yaml.safe_load(open(sys.argv[1]))
open_paths = sys.argv[2:]


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
        if is_open(path):
            if security != []:
                problems.append('%s: an open path declares `security: []` (has %r)' % (where, security))
            if {'401', '429'} & responses:
                problems.append('%s: an open path answers no 401/429' % where)
        else:
            if security != [{}, {'bearer': []}]:
                problems.append('%s: declares `security: [{}, {bearer: []}]` (has %r)' % (where, security))
            for code in ('401', '429'):
                if code not in responses:
                    problems.append('%s: lists %s (the lock can answer it)' % (where, code))
        if 'requestBody' in operation and '415' not in responses:
            problems.append('%s: reads a body, so lists 415' % where)
for problem in problems:
    print(problem)
print('%d problems' % len(problems))
sys.exit(1 if problems else 0)
