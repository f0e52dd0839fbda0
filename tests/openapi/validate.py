#!/usr/bin/env python3
"""Checks recorded REST exchanges against an OpenAPI 3.1 document, with validators that
are not Levelrail's: openapi-spec-validator checks the document itself, openapi-core each
answer (and each request that was accepted) against it.

Usage: validate.py OPENAPI_JSON EXCHANGES_JSON. Exit 3 when the validators are not
installed (pip install openapi-core openapi-spec-validator)."""
import json
import sys

try:
    from openapi_core import OpenAPI
    from openapi_core.testing import MockRequest, MockResponse
    from openapi_schema_validator import OAS31Validator
    from openapi_spec_validator import validate
except ImportError as e:  # pragma: no cover
    print(f"not installed: {e}", file=sys.stderr)
    sys.exit(3)


def check_events(spec, x):
    """A Server-Sent Events answer: the operation documents text/event-stream for the
    status, and each event's data is valid for the documented event schema (openapi-core
    reads an event stream as opaque bytes)."""
    template = next(
        (p for p in spec["paths"] if match(p, x["path"])), None)
    assert template, "no documented path"
    op = spec["paths"][template][x["method"].lower()]
    media = op["responses"][str(x["status"])]["content"]["text/event-stream"]
    schema = dict(media["x-levelrail-event-data"])
    schema["components"] = spec["components"]
    validator = OAS31Validator(schema)
    for block in x["response_body"].split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if fields.get("event") == "provision":
            validator.validate(json.loads(fields["data"]))
        elif fields.get("event") == "error":
            OAS31Validator({"$ref": "#/components/schemas/Error",
                            "components": spec["components"]}).validate(
                json.loads(fields["data"]))


def match(template, path):
    t, p = template.split("/"), path.split("/")
    return len(t) == len(p) and all(
        a == b or (a.startswith("{") and a.endswith("}")) for a, b in zip(t, p))


def main():
    spec = json.load(open(sys.argv[1]))
    exchanges = json.load(open(sys.argv[2]))
    validate(spec)
    api = OpenAPI.from_dict(spec)
    failures = []
    for n, x in enumerate(exchanges):
        args = {}
        for pair in filter(None, x["query"].split("&")):
            k, _, v = pair.partition("=")
            args.setdefault(k, v)
        body = x["request_body"]
        request = MockRequest(
            "http://localhost",
            x["method"].lower(),
            x["path"],
            args=args,
            headers={"Authorization": "Bearer token"},
            data=body.encode() if body is not None else None,
            content_type=x["request_content_type"] or "application/json",
        )
        response = MockResponse(
            x["response_body"].encode(),
            status_code=x["status"],
            content_type=x["response_content_type"].split(";")[0].strip(),
        )
        what = f'#{n} {x["method"]} {x["path"]}?{x["query"]} -> {x["status"]}'
        try:
            if x["status"] < 400:
                api.validate_request(request)
            if x["response_content_type"].startswith("text/event-stream"):
                check_events(spec, x)
            else:
                api.validate_response(request, response)
        except Exception as e:  # every validation error names what failed
            detail = getattr(e, "__cause__", None) or e
            failures.append(f"{what}: {type(e).__name__}: {e} ({detail})")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print(f"{len(exchanges)} exchanges valid")


main()
