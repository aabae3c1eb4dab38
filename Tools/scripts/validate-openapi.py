#!/usr/bin/env python3
"""Validates captured Rocalytics API requests against the API's published OpenAPI 3.1 description.

Usage: validate-openapi.py DIR [--require KIND,KIND,...]
       validate-openapi.py --self-test

The description is Packages/RocalyticsClient/Contracts/rocalytics-openapi.yaml (a copy of
`openapi.yaml` of the public repository Rocapine/rocalytics; its header names the commit).
DIR/rocalytics-openapi/ holds one JSON file per request, written by RocalyticsClient's replay
tests and by `collector serve` (the demo and the sample app) when TRACKER_CAPTURE_DIR is set:
  {"method": "POST", "url": "https://…/functions/v1/track" or "/functions/v1/track?…",
   "headers": [[name, value], …] or {name: value}, "body": JSON or null,
   "body_text": the text of a body that is not JSON (optional),
   "response": {"status": 200, "body": JSON} (optional: the collector's answer)}

Each request is checked against the operation of its path and method: the required header and
query parameters and their schemas (`format: uuid` included), the request body's presence, media
type and schema (formats such as `date-time` checked), and, for a track event, that its
`deduplication_id` starts with `{X-Roca-ID}-{name}` as the description says. A captured answer
is checked against the response schema of its status, when the description gives one (the
status route's).

Kinds: `identify`, `status`, and `track:<name>` for each name of the track payload's
discriminator (install, paywall_presented, purchase, trial_started, subscription_started). Those
must be valid. Everything else is beyond the published description and only counted: other paths
(`/functions/v1/onboarding-response`, `/functions/v1/demand-score`, `/functions/v1/paywall-presentations`,
the install ping `/install`) and track events of other names (`onboarding_completed`, custom events).

Exits 1 when a request of a listed kind is invalid, or when a kind named by --require was not
captured at all (the capture itself broke); 0 otherwise. A missing or empty DIR is not an error
unless --require is given. `--self-test` (run first by `make validate-openapi`) checks the checker:
every request of the reference fixture (identify 10/10, install 3/3, purchase 1/1 valid), the
description's own status example, the trial_started and subscription_started requests the README
says an app must send, and a list of broken requests that each must fail.
"""
import copy
import glob
import hashlib
import json
import os
import sys
import urllib.parse

try:
    import yaml
    from openapi_schema_validator import OAS31Validator
except ImportError as missing:  # pragma: no cover
    print(f"validate-openapi: Python package missing ({missing}); run `make deps`", file=sys.stderr)
    sys.exit(2)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DESCRIPTION = os.path.join(REPO, "Packages", "RocalyticsClient", "Contracts", "rocalytics-openapi.yaml")
FOLDER = "rocalytics-openapi"
FIXTURE = os.path.join(REPO, "Packages", "RocalyticsClient", "Tests", "RocalyticsClientTests", "Fixtures",
                       "rocalytics-reference.json")
OPERATION_KINDS = {"/functions/v1/identify": "identify", "/functions/v1/status": "status", "/functions/v1/track": "track"}


class Description:
    def __init__(self, path=DESCRIPTION):
        with open(path, encoding="utf-8") as f:
            self.spec = yaml.safe_load(f)
        OAS31Validator.check_schema({"components": self.spec["components"]})
        track = self.spec["components"]["schemas"]["TrackPayload"]
        self.track_names = sorted(track["discriminator"]["mapping"])

    def validator(self, schema):
        """A validator of `schema` (a fragment of the description), its `#/components/…` refs resolved."""
        root = {"components": self.spec["components"], **schema}
        return OAS31Validator(root, format_checker=OAS31Validator.FORMAT_CHECKER)

    def errors(self, schema, instance, where):
        found = sorted(self.validator(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
        out = []
        for e in found:
            # oneOf: say why the branch of the discriminator's value failed, not only "not valid under any".
            if e.validator == "oneOf" and e.context:
                by_branch = {}
                for sub in e.context:
                    by_branch.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else 0, []).append(sub)
                name = instance.get("name") if isinstance(instance, dict) else None
                mapping = self.spec["components"]["schemas"]["TrackPayload"].get("discriminator", {}).get("mapping", {})
                if name in mapping:
                    branch = self.spec["components"]["schemas"]["TrackPayload"]["oneOf"].index({"$ref": mapping[name]})
                    subs = [s for s in by_branch.get(branch, []) if "enum" != s.validator]
                    if subs:
                        out += [f"{where}{'/' + '/'.join(map(str, s.absolute_path)) if s.absolute_path else ''}: {s.message}"
                                for s in subs]
                        continue
            path = "/".join(str(p) for p in e.absolute_path)
            out.append(f"{where}{'/' + path if path else ''}: {e.message}")
        return out


def headers_of(request):
    raw = request.get("headers") or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    out = {}
    for name, value in pairs:
        out.setdefault(name.lower(), value)
    return out


def classify(description, request):
    """(kind, listed): the request's kind, and whether the description lists it."""
    url = urllib.parse.urlsplit(request.get("url", ""))
    kind = OPERATION_KINDS.get(url.path)
    if kind is None:
        return url.path or "(no url)", False
    if kind == "track":
        body = request.get("body")
        name = body.get("name") if isinstance(body, dict) else None
        if name in description.track_names:
            return f"track:{name}", True
        return f"track:{name if isinstance(name, str) else '(no name)'}", False
    return kind, True


def check(description, request):
    """Every problem of `request` against the description (empty when valid)."""
    problems = []
    url = urllib.parse.urlsplit(request.get("url", ""))
    operation = description.spec["paths"].get(url.path, {}).get(request.get("method", "").lower())
    if operation is None:
        return [f"{request.get('method')} {url.path} is not an operation of the description"]
    headers = headers_of(request)
    query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    for parameter in operation.get("parameters", []):
        source = headers if parameter["in"] == "header" else query if parameter["in"] == "query" else {}
        key = parameter["name"].lower() if parameter["in"] == "header" else parameter["name"]
        if key not in source:
            if parameter.get("required"):
                problems.append(f"{parameter['in']} {parameter['name']}: required, missing")
            continue
        problems += description.errors(parameter.get("schema", {}), source[key], f"{parameter['in']} {parameter['name']}")
    body = request.get("body")
    content = operation.get("requestBody", {}).get("content", {})
    if "requestBody" in operation:
        if body is None:
            if operation["requestBody"].get("required"):
                problems.append("body: required, missing" + (" (not JSON)" if request.get("body_text") else ""))
        else:
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media not in content:
                problems.append(f"header Content-Type: {media or '(none)'} is not one of {sorted(content)}")
            schema = content.get("application/json", {}).get("schema")
            if schema is not None:
                problems += description.errors(schema, body, "body")
    elif body is not None:
        problems.append("body: the operation takes none")
    # "deduplication_id: Must be formatted as `{X-Roca-ID}-{name}`" (a purchase adds its transaction).
    if url.path == "/functions/v1/track" and isinstance(body, dict):
        dedup, name, roca = body.get("deduplication_id"), body.get("name"), headers.get("x-roca-id")
        if isinstance(dedup, str) and isinstance(name, str) and roca is not None and not dedup.startswith(f"{roca}-{name}"):
            problems.append(f"body/deduplication_id: does not start with {{X-Roca-ID}}-{{name}} ({roca}-{name})")
    response = request.get("response")
    if isinstance(response, dict):
        answer = operation.get("responses", {}).get(str(response.get("status")))
        schema = (answer or {}).get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            problems += description.errors(schema, response.get("body"), f"response {response.get('status')}")
    return problems


def validate_folder(description, folder, require):
    files = sorted(glob.glob(os.path.join(folder, "*.json")))
    groups = {}
    unreadable = 0
    for path in files:
        try:
            with open(path, "rb") as f:
                raw = f.read()
            groups.setdefault(hashlib.sha256(raw).hexdigest(), [raw, []])[1].append(path)
        except OSError as e:
            print(f"FAIL {os.path.basename(path)}: unreadable: {e}")
            unreadable += 1
    stats = {}  # kind -> [listed, captured, distinct, invalid]
    failures = unreadable
    for raw, paths in groups.values():
        shown = os.path.basename(paths[0]) + (f" (and {len(paths) - 1} identical)" if len(paths) > 1 else "")
        try:
            request = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            print(f"FAIL {shown}: unreadable: {e}")
            failures += len(paths)
            continue
        kind, listed = classify(description, request)
        entry = stats.setdefault(kind, [listed, 0, 0, 0])
        entry[1] += len(paths)
        entry[2] += 1
        if listed:
            problems = check(description, request)
            if problems:
                entry[3] += len(paths)
                failures += len(paths)
                for p in problems:
                    print(f"FAIL {kind} {shown}: {p}")
    for kind, (listed, captured, distinct, invalid) in sorted(stats.items(), key=lambda kv: (not kv[1][0], kv[0])):
        if listed:
            print(f"{kind}: {captured} request(s) ({distinct} distinct), {captured - invalid} valid, {invalid} invalid")
    beyond = [f"{kind} {captured}" for kind, (listed, captured, _, _) in sorted(stats.items()) if not listed]
    if beyond:
        print("beyond the published description (counted, not checked): " + ", ".join(beyond))
    for kind in require:
        if not stats.get(kind, [False, 0])[1]:
            print(f"FAIL {kind}: no request captured (required)")
            failures += 1
    if failures:
        print(f"validate-openapi: {failures} request(s) failed")
        return 1
    print(f"validate-openapi: all {sum(s[1] for s in stats.values() if s[0])} request(s) of listed kinds valid"
          f" (description {os.path.relpath(DESCRIPTION, REPO)})")
    return 0


def reference_requests():
    with open(FIXTURE, encoding="utf-8") as f:
        fixture = json.load(f)
    return [r for s in fixture["scenarios"] for r in s["requests"]]


def self_test():
    description = Description()
    failures = 0

    def expect(condition, message):
        nonlocal failures
        if not condition:
            failures += 1
            print(f"FAIL self-test: {message}")

    # 1. The reference client's requests: the listed kinds valid, in the counts issue 39 found by hand.
    requests = reference_requests()
    counts = {}
    for r in requests:
        kind, listed = classify(description, r)
        counts.setdefault(kind, [0, 0])[0] += 1
        if listed:
            problems = check(description, r)
            expect(not problems, f"reference {kind} is invalid: {problems}")
            counts[kind][1] += 0 if problems else 1
    expect(counts.get("identify") == [10, 10], f"identify {counts.get('identify')} (want 10 of 10 valid)")
    expect(counts.get("track:install") == [3, 3], f"install {counts.get('track:install')} (want 3 of 3)")
    expect(counts.get("track:purchase") == [1, 1], f"purchase {counts.get('track:purchase')} (want 1 of 1)")
    expect(classify(description, {"url": "/functions/v1/track", "body": {"name": "onboarding_completed"}}) ==
           ("track:onboarding_completed", False), "onboarding_completed is beyond the description")
    expect(classify(description, {"url": "/functions/v1/demand-score"}) == ("/functions/v1/demand-score", False),
           "demand-score is beyond the description")

    install = next(r for r in requests if classify(description, r)[0] == "track:install")
    purchase = next(r for r in requests if classify(description, r)[0] == "track:purchase")
    identify = next(r for r in requests if classify(description, r)[0] == "identify")
    roca = headers_of(install)["x-roca-id"]

    def track(name, properties):
        r = copy.deepcopy(install)
        r["body"] = {"name": name, "deduplication_id": f"{roca}-{name}", "properties": properties,
                     "device_context": install["body"]["device_context"]}
        return r

    # 2. What the README says an app must pass with trial_started and subscription_started.
    subscription = {"product_id": "pro_yearly", "transaction_id": "2000000841136630", "price": 44.99, "currency": "EUR",
                    "period": "year"}
    trial = dict(subscription, price=0, trial_period_days=7, trial_end_date="2026-04-28T17:14:47.000Z")
    for name, props in [("trial_started", trial), ("subscription_started", subscription)]:
        expect(not check(description, track(name, props)), f"{name} with the README's properties: {check(description, track(name, props))}")

    # 3. The status route: the description's own example, and this collector's empty answer.
    example = description.spec["paths"]["/functions/v1/status"]["get"]["responses"]["200"]["content"]["application/json"]["example"]
    status = {"method": "GET", "url": "/functions/v1/status?app=com.rocapine.harmony", "headers": [],
              "body": None, "response": {"status": 200, "body": example}}
    expect(not check(description, status), f"the description's status example: {check(description, status)}")
    expect(not check(description, dict(status, response={"status": 200, "body": {"application_id": "a", "events": []}})),
           "an empty status")

    # 4. Broken requests: each must fail (the checker sees what it claims to check).
    def with_header(r, name, value):
        r = copy.deepcopy(r)
        r["headers"] = {k: v for k, v in headers_of(r).items() if k != name.lower()}
        if value is not None:
            r["headers"][name] = value
        return r

    def with_body(r, path, value):
        r = copy.deepcopy(r)
        node = r["body"]
        for key in path[:-1]:
            node = node[key]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
        return r

    broken = {
        "no X-Roca-ID": with_header(install, "X-Roca-ID", None),
        "X-Roca-ID not a uuid": with_header(install, "X-Roca-ID", "device-1"),
        "no X-Application-ID": with_header(identify, "X-Application-ID", None),
        "no X-Platform": with_header(purchase, "X-Platform", None),
        "text/plain body": with_header(install, "Content-Type", "text/plain"),
        "identify without a body": dict(copy.deepcopy(identify), body=None),
        "identify id not a string": with_body(identify, ["idfv"], 42),
        "GET track": dict(copy.deepcopy(install), method="GET"),
        "install without properties": with_body(install, ["properties"], None),
        "install_time not a date-time": with_body(install, ["properties", "install_time"], "yesterday"),
        "no deduplication_id": with_body(install, ["deduplication_id"], None),
        "deduplication_id of another device": with_body(install, ["deduplication_id"], "00000000-0000-4000-8000-000000000000-install"),
        "timestamp not a date-time": with_body(install, ["timestamp"], "10/01/2026"),
        "purchase without price": with_body(purchase, ["properties", "price"], None),
        "purchase price as text": with_body(purchase, ["properties", "price"], "9.99"),
        "purchase currency_code EURO": with_body(purchase, ["properties", "currency_code"], "EURO"),
        "purchase without is_trial": with_body(purchase, ["properties", "is_trial"], None),
        "trial_started without properties": track("trial_started", {}),
        "trial_started without trial_period_days": track("trial_started", subscription),
        "subscription_started without properties": track("subscription_started", {}),
        "subscription_started period annual": track("subscription_started", dict(subscription, period="annual")),
        "status without app": dict(status, url="/functions/v1/status"),
        "status count as text": dict(status, response={"status": 200, "body": {
            "application_id": "a", "events": [{"name": "install", "count": "1", "latest_received_at": "2026-06-09T15:01:09Z"}]}}),
        "status latest not a date-time": dict(status, response={"status": 200, "body": {
            "application_id": "a", "events": [{"name": "install", "count": 1, "latest_received_at": "today"}]}}),
    }
    for what, request in broken.items():
        expect(check(description, request), f"{what}: accepted")
    print(f"validate-openapi --self-test: {len(requests)} reference requests (identify 10/10, install 3/3, purchase 1/1 valid),"
          f" 2 README subscription events and 2 status answers valid, {len(broken)} broken requests each refused"
          + ("" if not failures else f"; {failures} FAILED"))
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    args = argv[1:]
    require = []
    if "--require" in args:
        i = args.index("--require")
        if i + 1 >= len(args):
            print("validate-openapi: --require needs KIND,KIND,...", file=sys.stderr)
            return 2
        require = [k for k in args[i + 1].split(",") if k]
        del args[i:i + 2]
    if len(args) != 1:
        print("usage: validate-openapi.py DIR [--require KIND,...] | --self-test", file=sys.stderr)
        return 2
    folder = os.path.join(args[0], FOLDER)
    if not glob.glob(os.path.join(folder, "*.json")) and not require:
        print(f"validate-openapi: no captured requests in {folder}; nothing to validate")
        return 0
    return validate_folder(Description(), folder, require)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
