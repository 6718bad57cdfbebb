"""OpenTelemetry parts no one here wrote, for tests/traces.rs.

  otel.py receiver [--hang]
      An OTLP/gRPC trace receiver built from the published OTLP protos (PyPI opentelemetry-proto)
      on grpcio, on 127.0.0.1, port 0. Prints "listening PORT", then one JSON line per span
      received. With --hang it takes every export and never answers (until the caller gives up).

  otel.py call ADDR METHOD HEX...
      A caller traced with the OpenTelemetry Python SDK: opens a span, puts its context in the
      gRPC metadata with the SDK's W3C propagator, and calls METHOD (a streaming method's path)
      on ADDR with the given messages (serialized protobuf, in hex). Prints one JSON line: the
      caller's trace and span ids, and the responses in hex.
"""

import json
import sys
import threading
from concurrent import futures

import grpc


def receiver(hang):
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    out = threading.Lock()

    def value(v):
        kind = v.WhichOneof("value")
        return getattr(v, kind) if kind else None

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            if hang:
                threading.Event().wait(timeout=3600)
            for resource_spans in request.resource_spans:
                resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        line = json.dumps({
                            "service": resource.get("service.name"),
                            "name": span.name,
                            "kind": span.kind,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "status": span.status.code,
                            "attributes": {a.key: value(a.value) for a in span.attributes},
                        })
                        with out:
                            print(line, flush=True)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    server.wait_for_termination()


def call(addr, method, messages):
    from opentelemetry import propagate, trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())
    tracer = trace.get_tracer("patience-tests")
    with tracer.start_as_current_span("caller") as span:
        carrier = {}
        propagate.inject(carrier)
        with grpc.insecure_channel(addr) as channel:
            stream = channel.stream_stream(method)
            requests = iter([bytes.fromhex(m) for m in messages])
            responses = [r.hex() for r in stream(requests, metadata=list(carrier.items()))]
        context = span.get_span_context()
    print(json.dumps({
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "traceparent": carrier.get("traceparent"),
        "responses": responses,
    }), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "receiver":
        receiver("--hang" in sys.argv[2:])
    elif sys.argv[1] == "call":
        call(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
