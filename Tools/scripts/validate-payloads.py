#!/usr/bin/env python3
"""Validates captured payloads against their JSON Schemas (draft 2020-12).

Usage: validate-payloads.py DIR
       validate-payloads.py --self-test

DIR holds one folder per schema, named after the schema file: the files in DIR/<name>/ are
validated against Packages/*/Contracts/<name>.schema.json (for example DIR/onboarding-run/ against
Packages/Core/Contracts/onboarding-run.schema.json). Tests write these folders through
TrackerCoreTestKit's PayloadCapture when TRACKER_CAPTURE_DIR is set. A folder named after an
OpenAPI description instead (Packages/*/Contracts/<name>.yaml, e.g. rocalytics-openapi) holds
captured API requests: validate-openapi.py checks those, this script leaves them out.

Prints the count per schema (captured and distinct) and every failure; exits 1 when a payload
fails (or cannot be read, or has no schema), 0 otherwise. A missing or empty DIR is not an error:
there is nothing to validate.

Two savings keep the whole check exact while the suites capture thousands of payloads:
- identical files (same SHA-256 of their bytes) are validated once, and a failure names every
  file with those bytes;
- a `$ref` whose target subschema already accepted an equal instance (same JSON value) accepts it
  again without descending: an onboarding run is sent again and again with the same earlier
  entries. Only acceptances are remembered; a failing instance is validated and reported in
  full every time. The schemas use no `unevaluated*` keyword, the one kind whose verdict depends
  on more than the instance and the subschema (checked below).
`--self-test` (run first by `make validate-payloads`) checks that the remembering validator gives
the plain validator's errors: every example of Packages/*/Contracts/examples against every schema,
then seeded mutations of each (a value replaced, a member added, deep inside accepted entries).
"""
import copy
import glob
import hashlib
import json
import os
import random
import sys

try:
    from jsonschema import Draft202012Validator, validators
except ImportError:  # pragma: no cover
    print("validate-payloads: Python package 'jsonschema' is missing (run `make deps`)", file=sys.stderr)
    sys.exit(2)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_schema(name):
    hits = sorted(glob.glob(os.path.join(REPO, "Packages", "*", "Contracts", name + ".schema.json")))
    return hits[0] if hits else None


def is_openapi_folder(name):
    return bool(glob.glob(os.path.join(REPO, "Packages", "*", "Contracts", name + ".yaml")))


def uses_unevaluated(node):
    if isinstance(node, dict):
        return any(k.startswith("unevaluated") or uses_unevaluated(v) for k, v in node.items())
    if isinstance(node, list):
        return any(uses_unevaluated(v) for v in node)
    return False


def memoizing_validator(schema):
    """A draft 2020-12 validator for `schema` whose `$ref` remembers the instances it accepted."""
    if uses_unevaluated(schema):
        return Draft202012Validator(schema)
    accepted = set()
    nodes = {}  # id -> node: each node keyed by its id stays alive, so the id is never reused
    plain_ref = Draft202012Validator.VALIDATORS["$ref"]

    def ref(validator, ref_value, instance, subschema):
        # The schema node holding this `$ref` fixes what it resolves to (one document, one base URI).
        nodes.setdefault(id(subschema), subschema)
        key = (id(subschema), ref_value, json.dumps(instance, sort_keys=True, separators=(",", ":")))
        if key in accepted:
            return
        errors = list(plain_ref(validator, ref_value, instance, subschema))
        if not errors:
            accepted.add(key)
        yield from errors

    cls = validators.extend(Draft202012Validator, {"$ref": ref})
    return cls(schema)


def error_list(validator, instance):
    return sorted((repr(list(e.absolute_path)), e.message) for e in validator.iter_errors(instance))


def mutations(instance, rnd, count):
    """`count` copies of `instance`, each with one value somewhere replaced or one member added."""
    for _ in range(count):
        x = copy.deepcopy(instance)
        slots = []

        def walk(node):
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for k, v in items:
                slots.append((node, k))
                walk(v)

        walk(x)
        if not slots:
            continue
        container, key = rnd.choice(slots)
        r = rnd.random()
        if r < 0.25:
            container[key] = "not valid %d" % rnd.randint(0, 9)
        elif r < 0.45:
            container[key] = None
        elif r < 0.6:
            container[key] = -1
        elif r < 0.75:
            container[key] = 1.5
        elif r < 0.9 and isinstance(container, dict):
            container["zz_unknown"] = 1
        else:
            container[key] = {"question_key": "q", "kind": "multi", "value": ["a", "a"]}
        yield x


def self_test():
    schemas = sorted(glob.glob(os.path.join(REPO, "Packages", "*", "Contracts", "*.schema.json")))
    examples = sorted(glob.glob(os.path.join(REPO, "Packages", "*", "Contracts", "examples", "**", "*.json"), recursive=True))
    instances = []
    for path in examples:
        with open(path, encoding="utf-8") as f:
            instances.append(json.load(f))
    rnd = random.Random(16)
    mutated = [m for x in instances for m in mutations(x, rnd, 10)]
    compared = differing = 0
    for schema_path in schemas:
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        plain, remembering = Draft202012Validator(schema), memoizing_validator(schema)
        for instance in instances + mutated:
            compared += 1
            expected, got = error_list(plain, instance), error_list(remembering, instance)
            if expected != got:
                differing += 1
                print(f"FAIL self-test {os.path.basename(schema_path)}: plain {expected[:3]} remembering {got[:3]}")
    if not instances or differing:
        print(f"validate-payloads --self-test: {differing} of {compared} verdicts differ ({len(instances)} examples)")
        return 1
    print(f"validate-payloads --self-test: {compared} verdicts equal ({len(instances)} examples, {len(mutated)} mutations,"
          f" {len(schemas)} schemas)")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print("usage: validate-payloads.py DIR | --self-test", file=sys.stderr)
        return 2
    root = argv[1]
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) if os.path.isdir(root) else []
    for name in [d for d in folders if is_openapi_folder(d)]:
        print(f"{name}: API requests, validated by validate-openapi.py")
    folders = [d for d in folders if not is_openapi_folder(d)]
    payload_count = sum(len(glob.glob(os.path.join(root, d, "*.json"))) for d in folders)
    if payload_count == 0:
        print(f"validate-payloads: no captured payloads in {root}; nothing to validate")
        return 0

    failures = 0
    for name in folders:
        files = sorted(glob.glob(os.path.join(root, name, "*.json")))
        if not files:
            continue
        schema_path = find_schema(name)
        if schema_path is None:
            print(f"FAIL {name}: no schema Packages/*/Contracts/{name}.schema.json for {len(files)} payload(s)")
            failures += len(files)
            continue
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        Draft202012Validator.check_schema(schema)
        validator = memoizing_validator(schema)
        # Files with the same bytes, validated once: SHA-256 -> the files.
        groups = {}
        for path in files:
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except OSError as e:
                print(f"FAIL {name}/{os.path.basename(path)}: unreadable: {e}")
                groups[("unreadable", path)] = None
                continue
            groups.setdefault(hashlib.sha256(raw).hexdigest(), (raw, []))[1].append(path)
        bad = sum(1 for g in groups.values() if g is None)
        for group in groups.values():
            if group is None:
                continue
            raw, paths = group
            shown = os.path.basename(paths[0]) + (f" (and {len(paths) - 1} identical)" if len(paths) > 1 else "")
            try:
                instance = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                print(f"FAIL {name}/{shown}: unreadable: {e}")
                bad += len(paths)
                continue
            errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
            if errors:
                bad += len(paths)
                for e in errors:
                    where = "/".join(str(p) for p in e.absolute_path) or "(root)"
                    print(f"FAIL {name}/{shown} at {where}: {e.message}")
        distinct = sum(1 for g in groups.values() if g is not None)
        failures += bad
        print(f"{name}: {len(files)} payload(s) ({distinct} distinct), {len(files) - bad} valid, {bad} invalid"
              f" (schema {os.path.relpath(schema_path, REPO)})")

    if failures:
        print(f"validate-payloads: {failures} payload(s) failed")
        return 1
    print(f"validate-payloads: all {payload_count} payload(s) valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
