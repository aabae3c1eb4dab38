#!/usr/bin/env python3
"""Validates captured payloads against their JSON Schemas (draft 2020-12).

Usage: validate-payloads.py DIR

DIR holds one folder per schema, named after the schema file: the files in DIR/<name>/ are
validated against Packages/*/Contracts/<name>.schema.json (for example DIR/onboarding-run/ against
Packages/Core/Contracts/onboarding-run.schema.json). Tests write these folders through
TrackerCoreTestKit's PayloadCapture when TRACKER_CAPTURE_DIR is set.

Prints the count per schema and every failure; exits 1 when a payload fails (or cannot be read, or
has no schema), 0 otherwise. A missing or empty DIR is not an error: there is nothing to validate.
"""
import glob
import json
import os
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover
    print("validate-payloads: Python package 'jsonschema' is missing (run `make deps`)", file=sys.stderr)
    sys.exit(2)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_schema(name):
    hits = sorted(glob.glob(os.path.join(REPO, "Packages", "*", "Contracts", name + ".schema.json")))
    return hits[0] if hits else None


def main(argv):
    if len(argv) != 2:
        print("usage: validate-payloads.py DIR", file=sys.stderr)
        return 2
    root = argv[1]
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) if os.path.isdir(root) else []
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
        validator = Draft202012Validator(schema)
        bad = 0
        for path in files:
            try:
                with open(path, "rb") as f:
                    raw = f.read()
                instance = json.loads(raw.decode("utf-8"))
            except (OSError, ValueError) as e:
                print(f"FAIL {name}/{os.path.basename(path)}: unreadable: {e}")
                bad += 1
                continue
            errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
            if errors:
                bad += 1
                for e in errors:
                    where = "/".join(str(p) for p in e.absolute_path) or "(root)"
                    print(f"FAIL {name}/{os.path.basename(path)} at {where}: {e.message}")
        failures += bad
        print(f"{name}: {len(files)} payload(s), {len(files) - bad} valid, {bad} invalid"
              f" (schema {os.path.relpath(schema_path, REPO)})")

    if failures:
        print(f"validate-payloads: {failures} payload(s) failed")
        return 1
    print(f"validate-payloads: all {payload_count} payload(s) valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
