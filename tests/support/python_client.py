#!/usr/bin/env python3
"""A Python gRPC client of the node (grpcio, the gRPC C core), dialing it as a user's program
would: attaches a session, enumerates the devices it sees, and prints them as JSON.

    python3 tests/support/python_client.py TARGET [--authority NAME] [--label LABEL]

TARGET is a gRPC target, such as `unix:/run/accelhost/node.sock`: over a Unix socket grpcio
sends the socket's path as the HTTP/2 `:authority`, which the node has to take.
`--authority NAME` makes it send NAME instead (`grpc.default_authority`).

Needs grpcio and grpcio-tools: the stubs are generated from the project's
node/proto/accelhost/node/v1/node.proto into a temporary folder at each start, so the
tree keeps no generated code.

Prints one line of JSON on stdout and exits 0:
    {"client": ..., "node": ..., "session": ..., "devices": ["<plugin>/<name>", ...]}
A gRPC error prints {"error": "<status code name>", "details": ...} and exits 1; a missing
grpcio or grpcio-tools says so on stderr and exits 2.
"""

import argparse
import json
import os
import sys
import tempfile

PROTO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "node", "proto")
PROTO = "accelhost/node/v1/node.proto"


def stubs(folder):
    """Generates the node's Python stubs into `folder` and imports them."""
    import grpc_tools
    from grpc_tools import protoc

    # The protobuf's own protos (node.proto's call rules extend descriptor.proto's options).
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    status = protoc.main(
        [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={folder}",
            f"--grpc_python_out={folder}",
            PROTO,
        ]
    )
    if status != 0:
        sys.exit(f"python_client: protoc failed on {os.path.join(PROTO_ROOT, PROTO)}")
    sys.path.insert(0, folder)
    from accelhost.node.v1 import node_pb2, node_pb2_grpc

    return node_pb2, node_pb2_grpc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="a gRPC target, such as unix:/run/accelhost/node.sock")
    parser.add_argument("--authority", help="the :authority to send instead of grpcio's own")
    parser.add_argument("--label", default="python-client", help="the session's client_label")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for each call")
    args = parser.parse_args()

    try:
        import grpc
    except ImportError as err:
        print(f"python_client: needs grpcio and grpcio-tools ({err})", file=sys.stderr)
        sys.exit(2)

    with tempfile.TemporaryDirectory(prefix="accelhost-py-stubs-") as folder:
        try:
            node_pb2, node_pb2_grpc = stubs(folder)
        except ImportError as err:
            print(f"python_client: needs grpcio and grpcio-tools ({err})", file=sys.stderr)
            sys.exit(2)

        options = [("grpc.default_authority", args.authority)] if args.authority else []
        with grpc.insecure_channel(args.target, options=options) as channel:
            stub = node_pb2_grpc.NodeStub(channel)
            events = None
            try:
                # The session lives as long as this stream: its first event names it.
                events = stub.Attach(
                    node_pb2.AttachRequest(client_label=args.label), timeout=args.timeout
                )
                first = next(events)
                if first.WhichOneof("event") != "attached":
                    raise SystemExit(f"python_client: Attach's first event is {first}")
                attached = first.attached
                reply = stub.Enumerate(
                    node_pb2.EnumerateRequest(session=attached.session), timeout=args.timeout
                )
                print(
                    json.dumps(
                        {
                            "client": attached.client,
                            "node": attached.node,
                            "session": attached.session,
                            "devices": [device.id for device in reply.devices],
                        }
                    ),
                    flush=True,
                )
            except grpc.RpcError as err:
                print(json.dumps({"error": err.code().name, "details": err.details()}), flush=True)
                sys.exit(1)
            finally:
                if events is not None:
                    events.cancel()


if __name__ == "__main__":
    main()
