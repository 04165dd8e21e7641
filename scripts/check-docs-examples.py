#!/usr/bin/env python3
"""Checks that the API reference page shows every example openapi.yaml gives.

Usage: check-docs-examples.py OPENAPI_YAML PAGE_HTML

Every `example` (a parameter's, header's, media type's or schema's), every entry of an
`examples` list (schemas) and the `value` of every Example Object (an `examples` map, and
`components/examples`) must appear in the page's text (entities decoded) as
scripts/openapi-docs.py shows it: a string as it is (without a final newline), anything else
as JSON indented by two spaces. Prints each missing example by its place in the spec; exits 1
if any is missing. Run by Tests/BlueLibraryServerTests/DocsTests.swift against the page the
server serves at /docs/.
"""
import html
import json
import sys

import yaml

spec = yaml.safe_load(open(sys.argv[1]))
page = html.unescape(open(sys.argv[2], encoding='utf-8').read())


def shown(value):
    return value.rstrip('\n') if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


examples = []


def walk(node, where, in_properties=False):
    if isinstance(node, dict):
        for key, value in node.items():
            here = '%s/%s' % (where, key)
            if key == 'example' and not in_properties:
                examples.append((here, value))
            elif key == 'examples' and not in_properties and isinstance(value, list):
                examples.extend(('%s/%d' % (here, i), v) for i, v in enumerate(value))
            elif key == 'examples' and not in_properties and isinstance(value, dict):
                for name, entry in value.items():
                    if isinstance(entry, dict) and 'value' in entry:
                        examples.append(('%s/%s' % (here, name), entry['value']))
            else:
                # A schema's `properties` are named by the user: a property called `example` is no example.
                walk(value, here, in_properties=(key == 'properties' and not in_properties))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, '%s/%d' % (where, i))


walk(spec, '#')
missing = [(where, value) for where, value in examples if shown(value) not in page]
for where, value in missing:
    print('not on the page: %s: %s' % (where, shown(value)[:200]))
print('%d examples, %d missing' % (len(examples), len(missing)))
sys.exit(1 if missing else 0)
