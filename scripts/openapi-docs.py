#!/usr/bin/env python3
"""Writes the readable API reference (served at /docs) from openapi.yaml.

Usage: openapi-docs.py [--check] OPENAPI_YAML OUTPUT_HTML

One static HTML page, no script: the document's description (paging for client authors,
security, query parameters), a table of contents by tag, every operation (method, path,
summary, security, parameters, request body, every response with its media types and schema),
the event schemas of /events and every schema of `components/schemas`, and every example the
spec gives (parameters, request and response bodies, response headers, schemas), each shown as
`example_text` writes it (scripts/check-docs-examples.py checks that none is left out). Descriptions are the
spec's Markdown, rendered with a small subset (paragraphs, `-` lists, fenced code, `code`,
**bold**, [links](url)). The style sheet is Resources/docs/docs.css beside it.
With --check nothing is written: the exit status is 1 when OUTPUT_HTML is not what this script
would write (Tests/BlueLibraryServerTests/DocsTests.swift runs it so). Edit openapi.yaml, then
run this to refresh the page.
"""
import html
import json
import re
import sys

import yaml

METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']


def inline(text):
    text = html.escape(text, quote=False)
    text = re.sub(r'`([^`]+)`', r'<code>\1</code>', text)
    text = re.sub(r'\*\*([^*]+)\*\*', r'<strong>\1</strong>', text)
    text = re.sub(r'\[([^\]]+)\]\(([^)\s]+)\)', lambda m: '<a href="%s">%s</a>' % (html.escape(m.group(2)), m.group(1)), text)
    return text


def markdown(text):
    """The spec's Markdown subset as HTML."""
    out, paragraph, items, code = [], [], [], None
    def flush():
        if paragraph:
            out.append('<p>%s</p>' % inline(' '.join(paragraph)))
            paragraph.clear()
        if items:
            out.append('<ul>%s</ul>' % ''.join('<li>%s</li>' % inline(' '.join(i)) for i in items))
            items.clear()
    for line in (text or '').split('\n'):
        if code is not None:
            if line.strip().startswith('```'):
                out.append('<pre><code>%s</code></pre>' % html.escape('\n'.join(code)))
                code = None
            else:
                code.append(line)
            continue
        stripped = line.strip()
        if stripped.startswith('```'):
            flush()
            code = []
        elif not stripped:
            flush()
        elif re.match(r'^[-*] ', stripped):
            if paragraph:
                out.append('<p>%s</p>' % inline(' '.join(paragraph)))
                paragraph.clear()
            items.append([stripped[2:]])
        elif items and line.startswith('  '):
            items[-1].append(stripped)
        else:
            if items:
                flush()
            paragraph.append(stripped)
    flush()
    return '\n'.join(out)


def example_text(value):
    """How an example is shown: a string as it is (without a final newline), anything else as
    indented JSON."""
    if isinstance(value, str):
        return value.rstrip('\n')
    return json.dumps(value, indent=2, ensure_ascii=False)


def anchor(*parts):
    return re.sub(r'[^a-zA-Z0-9]+', '-', '-'.join(parts)).strip('-').lower()


class Page:
    def __init__(self, spec):
        self.spec = spec

    def deref(self, node):
        while isinstance(node, dict) and '$ref' in node:
            target = self.spec
            for part in node['$ref'][2:].split('/'):
                target = target[part.replace('~1', '/').replace('~0', '~')]
            node = target
        return node

    def type_of(self, schema):
        """A short type description of a schema, with links to named schemas."""
        if not isinstance(schema, dict):
            return ''
        if '$ref' in schema:
            name = schema['$ref'].split('/')[-1]
            return '<a href="#schema-%s">%s</a>' % (anchor(name), html.escape(name))
        for key in ('oneOf', 'anyOf'):
            if key in schema:
                return ' or '.join(self.type_of(s) for s in schema[key])
        if 'allOf' in schema:
            return ' and '.join(self.type_of(s) for s in schema['allOf'])
        kind = schema.get('type', 'any')
        if isinstance(kind, list):
            kind = ' | '.join(kind)
        text = html.escape(str(kind))
        if kind == 'array' and 'items' in schema:
            text = 'array of ' + self.type_of(schema['items'])
        facts = []
        if 'enum' in schema:
            facts.append('one of ' + ', '.join('<code>%s</code>' % html.escape(str(v)) for v in schema['enum']))
        if 'const' in schema:
            facts.append('always <code>%s</code>' % html.escape(str(schema['const'])))
        if 'minimum' in schema or 'maximum' in schema:
            facts.append('%s to %s' % (schema.get('minimum', '…'), schema.get('maximum', '…')))
        if 'minLength' in schema or 'maxLength' in schema:
            facts.append('%s to %s characters' % (schema.get('minLength', 0), schema.get('maxLength', '…')))
        if 'default' in schema:
            facts.append('default <code>%s</code>' % html.escape(str(schema['default'])))
        if 'pattern' in schema:
            facts.append('pattern <code>%s</code>' % html.escape(schema['pattern']))
        if 'format' in schema:
            facts.append(html.escape(schema['format']))
        text += ' (' + '; '.join(facts) + ')' if facts else ''
        shown = ([schema['example']] if 'example' in schema else []) + list(schema.get('examples') or [])
        if shown:
            text += ', e.g. ' + ', '.join('<code>%s</code>' % html.escape(example_text(v), quote=False) for v in shown)
        return text

    def examples(self, node):
        """The examples of a parameter, header or media type object, as HTML (empty if none)."""
        node = self.deref(node) if isinstance(node, dict) else {}
        shown = []
        if 'example' in node:
            shown.append((None, node['example']))
        for name, example in (node.get('examples') or {}).items():
            example = self.deref(example)
            if 'value' in example:
                shown.append((example.get('summary') or name, example['value']))
        out = []
        for label, value in shown:
            text = html.escape(example_text(value), quote=False)
            if '\n' in text or len(text) > 60:
                out.append('<details class="example"><summary>Example%s</summary><pre><code>%s</code></pre></details>'
                           % (': ' + inline(label) if label else '', text))
            else:
                out.append('<p class="example">Example%s: <code>%s</code></p>' % (' (' + inline(label) + ')' if label else '', text))
        return ''.join(out)

    def headers(self, response):
        """A response's headers: each name, with its examples."""
        items = []
        for name, header in (response.get('headers') or {}).items():
            items.append('<li><code>%s</code>%s</li>' % (html.escape(name), self.examples(header)))
        return '<ul class="headers">%s</ul>' % ''.join(items) if items else ''

    def operation(self, path, method, op, item):
        out = ['<section class="operation" id="%s">' % anchor('op', op.get('operationId', method + path))]
        out.append('<h3><span class="method %s">%s</span> <code>%s</code></h3>' % (method, method.upper(), html.escape(path)))
        out.append('<p class="summary">%s</p>' % inline(op.get('summary', '')))
        security = op.get('security', self.spec.get('security'))
        if security == []:
            out.append('<p class="security">Open: no token needed, even with write protection on.</p>')
        else:
            out.append('<p class="security">Needs <code>Authorization: Bearer &lt;token&gt;</code> while write protection is on'
                       + (' (reads only with <code>access.protectReads</code>).' if method in ('get', 'head') and path != '/settings' else '.')
                       + '</p>')
        if item.get('x-same-as'):
            out.append('<p>The same as <a href="#%s"><code>%s</code></a>, for the library <code>{lib}</code>.</p>'
                       % (anchor('path', item['x-same-as']), html.escape(item['x-same-as'])))
        else:
            out.append(markdown(op.get('description', '')))
        parameters = [self.deref(p) for p in item.get('parameters', []) + op.get('parameters', [])]
        if parameters:
            out.append('<table><caption>Parameters</caption><tr><th>name</th><th>in</th><th>type</th><th>description</th></tr>')
            for p in parameters:
                out.append('<tr><td><code>%s</code>%s</td><td>%s</td><td>%s</td><td>%s%s</td></tr>' % (
                    html.escape(p['name']), ' <em>required</em>' if p.get('required') else '', p['in'],
                    self.type_of(p.get('schema', {})), markdown(p.get('description', '')), self.examples(p)))
            out.append('</table>')
        body = self.deref(op.get('requestBody')) if op.get('requestBody') else None
        if body:
            out.append('<table><caption>Request body%s</caption><tr><th>media type</th><th>schema</th></tr>'
                       % (' (required)' if body.get('required') else ''))
            for media, content in body.get('content', {}).items():
                out.append('<tr><td><code>%s</code></td><td>%s%s</td></tr>'
                           % (html.escape(media), self.type_of(content.get('schema', {})), self.examples(content)))
            out.append('</table>')
        out.append('<table><caption>Responses</caption><tr><th>status</th><th>description</th><th>body</th></tr>')
        for status, response in op.get('responses', {}).items():
            response = self.deref(response)
            bodies = ', '.join('<code>%s</code> %s%s' % (html.escape(m), self.type_of(c.get('schema', {})), self.examples(c))
                               for m, c in (response.get('content') or {}).items())
            out.append('<tr><td>%s</td><td>%s%s</td><td>%s</td></tr>'
                       % (html.escape(str(status)), markdown(response.get('description', '')), self.headers(response), bodies))
        out.append('</table>')
        events = (op.get('responses', {}).get('200') or {}).get('x-event-schemas')
        if events:
            out.append('<table><caption>Events (<code>data</code> of each)</caption><tr><th>event</th><th>schema</th></tr>')
            for name, schema in events.items():
                out.append('<tr><td><code>%s</code></td><td>%s</td></tr>' % (html.escape(name), self.type_of(schema)))
            out.append('</table>')
        out.append('</section>')
        return '\n'.join(out)

    def schema(self, name, schema):
        out = ['<section class="schema" id="schema-%s"><h3>%s</h3>' % (anchor(name), html.escape(name))]
        out.append(markdown(schema.get('description', '')))
        out.append('<p>%s</p>' % self.type_of({k: v for k, v in schema.items() if k != 'description'}))
        properties = schema.get('properties', {})
        required = set(schema.get('required', []))
        if properties:
            out.append('<table><tr><th>field</th><th>type</th><th>description</th></tr>')
            for field, sub in properties.items():
                out.append('<tr><td><code>%s</code>%s</td><td>%s</td><td>%s</td></tr>' % (
                    html.escape(field), ' <em>required</em>' if field in required else '', self.type_of(sub),
                    markdown(sub.get('description', '') if isinstance(sub, dict) else '')))
            out.append('</table>')
        out.append('</section>')
        return '\n'.join(out)

    def render(self):
        info = self.spec['info']
        by_tag = {}
        for path, item in self.spec['paths'].items():
            for method in METHODS:
                if method in item:
                    op = item[method]
                    by_tag.setdefault((op.get('tags') or ['other'])[0], []).append((path, method, op, item))
        tags = [t['name'] for t in self.spec.get('tags', [])] + sorted(set(by_tag) - {t['name'] for t in self.spec.get('tags', [])})
        out = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
               '<meta name="viewport" content="width=device-width, initial-scale=1">',
               '<title>%s API reference</title>' % html.escape(info['title']),
               '<link rel="stylesheet" href="docs.css">', '</head>', '<body>',
               '<header><h1>%s API reference <small>%s</small></h1>' % (html.escape(info['title']), html.escape(info['version'])),
               '<p>%s Generated from <a href="../openapi.yaml">openapi.yaml</a> (OpenAPI %s), which is the contract.</p></header>'
               % (inline(info.get('summary', '')), html.escape(self.spec['openapi'])),
               '<nav><h2>Contents</h2><ul><li><a href="#overview">Overview</a></li>']
        for tag in tags:
            if tag not in by_tag:
                continue
            out.append('<li><a href="#tag-%s">%s</a><ul>' % (anchor(tag), html.escape(tag)))
            for path, method, op, _ in by_tag[tag]:
                out.append('<li><a href="#%s"><span class="method %s">%s</span> %s</a></li>'
                           % (anchor('op', op.get('operationId', method + path)), method, method.upper(), html.escape(path)))
            out.append('</ul></li>')
        out.append('<li><a href="#schemas">Schemas</a></li></ul></nav><main>')
        out.append('<section id="overview"><h2>Overview</h2>%s</section>' % markdown(info.get('description', '')))
        descriptions = {t['name']: t.get('description', '') for t in self.spec.get('tags', [])}
        for tag in tags:
            if tag not in by_tag:
                continue
            out.append('<section id="tag-%s"><h2>%s</h2>%s' % (anchor(tag), html.escape(tag), markdown(descriptions.get(tag, ''))))
            seen_paths = set()
            for path, method, op, item in by_tag[tag]:
                if path not in seen_paths:
                    out.append('<span id="%s"></span>' % anchor('path', path))
                    seen_paths.add(path)
                out.append(self.operation(path, method, op, item))
            out.append('</section>')
        out.append('<section id="schemas"><h2>Schemas</h2>')
        for name, schema in self.spec.get('components', {}).get('schemas', {}).items():
            out.append(self.schema(name, schema))
        out.append('</section></main></body></html>')
        return '\n'.join(out) + '\n'


def main():
    args = sys.argv[1:]
    check = '--check' in args
    args = [a for a in args if a != '--check']
    if len(args) != 2:
        sys.exit(__doc__)
    page = Page(yaml.safe_load(open(args[0]))).render()
    if check:
        try:
            current = open(args[1]).read()
        except FileNotFoundError:
            current = None
        if current != page:
            print('%s is out of date with %s; run scripts/openapi-docs.py %s %s' % (args[1], args[0], args[0], args[1]))
            sys.exit(1)
        return
    with open(args[1], 'w') as out:
        out.write(page)


main()
