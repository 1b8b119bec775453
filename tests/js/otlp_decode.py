"""Decodes OTLP/HTTP JSON bodies with the OpenTelemetry protobuf definitions (tests/js/tracing-otlp).

Reads a JSON array of request bodies (strings) on stdin. Each body must parse into an
ExportTraceServiceRequest with protobuf's JSON parser, unknown fields refused, after its hex ids
(OTLP JSON writes traceId / spanId as hex, protobuf JSON expects base64) are checked and turned
into base64. Prints a JSON array: per body, the decoded request (protobuf's own JSON form, ids
back in hex). Exits 1 with the parser's message when a body does not decode.
"""

import base64
import json
import re
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

IDS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}


def ids_to_base64(span, where):
    for key, width in IDS.items():
        if key not in span:
            continue
        value = span[key]
        if not isinstance(value, str) or not re.fullmatch("[0-9a-f]{%d}" % width, value):
            raise ValueError(f"{where}.{key}: expected {width} lowercase hex characters, got {value!r}")
        span[key] = base64.b64encode(bytes.fromhex(value)).decode()
    for i, link in enumerate(span.get("links", [])):
        ids_to_base64(link, f"{where}.links[{i}]")


def ids_to_hex(span):
    for key in IDS:
        if key in span:
            span[key] = base64.b64decode(span[key]).hex()


def main():
    out = []
    for n, body in enumerate(json.load(sys.stdin)):
        doc = json.loads(body)
        for r, rs in enumerate(doc.get("resourceSpans", [])):
            for s, ss in enumerate(rs.get("scopeSpans", [])):
                for i, span in enumerate(ss.get("spans", [])):
                    ids_to_base64(span, f"body {n}: resourceSpans[{r}].scopeSpans[{s}].spans[{i}]")
        msg = ExportTraceServiceRequest()
        try:
            json_format.Parse(json.dumps(doc), msg, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            print(f"body {n}: {e}", file=sys.stderr)
            sys.exit(1)
        decoded = json_format.MessageToDict(msg)
        for rs in decoded.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    ids_to_hex(span)
        out.append(decoded)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
