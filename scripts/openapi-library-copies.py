#!/usr/bin/env python3
"""Writes the /libraries/{lib}/... copies of the album routes into openapi.yaml.

Usage: openapi-library-copies.py [--check] OPENAPI_YAML

Every album route exists twice: /albums... (the library `default`) and
/libraries/{lib}/albums... (one handler, registered for both prefixes). The spec keeps one
hand-written entry per route; this script derives the prefixed copies from it (OpenAPI 3.1
path items cannot $ref another path item and add the `lib` parameter, and operation ids must
be unique): each copy has `x-same-as: <bare path>`, a summary and description, the `LibraryId`
path parameter, operation ids suffixed `InLibrary`, the `libraries` tag, and a 404
`LibraryNotFound` response where the bare operation has no 404 of its own. Existing copies
(path items with `x-same-as`) are replaced, so running it again is harmless. The copies go
after `/libraries/{lib}` (or before `/settings`).

Edit the bare route, then run this. With --check nothing is written: the exit status is 1 when
the file is not what the script would write (Tests/BlueLibraryServerTests/OpenAPISpecTests
runs it so).
"""
import re
import sys

ROUTES = ['/albums', '/albums/import', '/albums/{id}', '/albums/{id}/cover', '/albums/{id}/table', '/albums/{id}/move',
          '/albums/at/{index}', '/batch', '/undo', '/state', '/archive', '/events', '/changes']


def regenerate(text):
    lines = text.split('\n')
    start = lines.index('paths:')
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(' '))
    blocks = []  # [path, lines]
    for line in lines[start + 1:end]:
        if line.startswith('  /') and line.endswith(':') and not line.startswith('   '):
            blocks.append([line[2:-1], [line]])
        else:
            blocks[-1][1].append(line)
    blocks = [b for b in blocks if not any(l.startswith('    x-same-as:') for l in b[1])]
    by_path = {path: block for path, block in blocks}
    copies = []
    for route in ROUTES:
        body = by_path[route][1:]
        out = [f'  /libraries/{{lib}}{route}:', f'    x-same-as: {route}',
               f'    summary: {route} in the library {{lib}}',
               '    description: |',
               f'      Exactly `{route}` (see there), for the library `{{lib}}` instead of `default`:',
               '      its own order, versions, undo stack, states, change feed and events. An unknown',
               '      or malformed library id is 404 `urn:bluelibrary:problem:library-not-found`.',
               '    parameters:',
               "      - $ref: '#/components/parameters/LibraryId'"]
        if body and body[0] == '    parameters:':
            body = body[1:]  # the bare route's own path parameters follow LibraryId
        for line in body:
            match = re.match(r'^(\s+operationId: )(\w+)$', line)
            if match:
                line = match.group(1) + match.group(2) + 'InLibrary'
            match = re.match(r'^(      tags: \[)(.*)\]$', line)
            if match:
                line = match.group(1) + match.group(2) + ', libraries]'
            out.append(line)
        while out and out[-1] == '':
            out.pop()
        copies.append([None, with_library_not_found(out)])
    paths = [path for path, _ in blocks]
    anchor = paths.index('/libraries/{lib}') + 1 if '/libraries/{lib}' in paths else paths.index('/settings')
    ordered = blocks[:anchor] + copies + blocks[anchor:]
    return '\n'.join(lines[:start + 1] + [l for _, block in ordered for l in block] + lines[end:])


def with_library_not_found(lines):
    """Adds `'404': LibraryNotFound` to every responses block that has no 404 (before the
    first larger status)."""
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i] == '      responses:':
            j = i + 1
            while j < len(lines) and (lines[j] == '' or lines[j].startswith('       ')):
                j += 1
            block = lines[i + 1:j]
            if "        '404':" not in block:
                at = next((n for n, l in enumerate(block)
                           if re.match(r"^        '(\d+)':", l) and int(re.match(r"^        '(\d+)':", l).group(1)) > 404),
                          len(block))
                block = block[:at] + ["        '404':", "          $ref: '#/components/responses/LibraryNotFound'"] + block[at:]
            out.extend(block)
            i = j
            continue
        i += 1
    return out


def main():
    args = sys.argv[1:]
    check = '--check' in args
    args = [a for a in args if a != '--check']
    if len(args) != 1:
        sys.exit(__doc__)
    text = open(args[0]).read()
    result = regenerate(text)
    if check:
        if result != text:
            print(f'{args[0]}: the /libraries/{{lib}} copies are not in step with their bare routes; '
                  f'run scripts/openapi-library-copies.py {args[0]}')
            sys.exit(1)
        return
    if result != text:
        # Write through a symlink (the root openapi.yaml) rather than replacing it.
        with open(args[0], 'r+') as spec:
            spec.seek(0)
            spec.write(result)
            spec.truncate()


main()
