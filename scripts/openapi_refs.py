"""$ref resolution over a loaded openapi.yaml, shared by the spec-checking scripts."""


def deref(spec, node):
    """`node` with every local `$ref` followed (`#/components/...`, JSON Pointer escapes)."""
    while isinstance(node, dict) and '$ref' in node:
        target = spec
        for part in node['$ref'][2:].split('/'):
            target = target[part.replace('~1', '/').replace('~0', '~')]
        node = target
    return node


def branches(spec, schema):
    """The schema and, flattened, every anyOf/oneOf/allOf branch of it."""
    schema = deref(spec, schema)
    out = [schema]
    for key in ('anyOf', 'oneOf', 'allOf'):
        for branch in schema.get(key, []):
            out += branches(spec, branch)
    return out
