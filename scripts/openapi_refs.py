"""$ref resolution and the operations of a loaded openapi.yaml, shared by the spec-checking scripts."""


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


def bare_operations(spec):
    """(path, METHOD, operation, parameters) of every operation that takes input on a bare route
    (not a `/libraries/{lib}` copy, `x-same-as`), its path-level and own parameters dereferenced."""
    for path, item in spec['paths'].items():
        if 'x-same-as' in item:
            continue
        for method, operation in item.items():
            if method not in ('get', 'put', 'post', 'delete', 'patch'):
                continue
            parameters = [deref(spec, p) for p in item.get('parameters', []) + operation.get('parameters', [])]
            yield path, method.upper(), operation, parameters
