#!/usr/bin/python3
"""Closed-loop clients of a running `tutti serve` for a drain check: THREADS
over gRPC and THREADS over HTTP keep-alive each send lenet5 requests one
after another until their first answer that is not a result, for at most
SECONDS, then stop, as a client without retries does. Prints one line per
protocol: the count of each outcome (OK, UNAVAILABLE or 503 — refused
cleanly — and anything else, such as CANCELLED or a reset connection).
    drain_clients.py HTTP_PORT GRPC_PORT THREADS SECONDS
"""
import collections
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import grpc

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
IMAGE = [0.0] * 784


def grpc_client(port, deadline, pb, counts, lock):
    request = pb.ModelInferRequest(model_name="lenet5")
    request.inputs.add(name="image", datatype="FP32", shape=[1, 1, 28, 28]).contents.fp32_contents.extend(IMAGE)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                   request_serializer=pb.ModelInferRequest.SerializeToString,
                                   response_deserializer=pb.ModelInferResponse.FromString)
        while time.time() < deadline:
            try:
                call(request, timeout=10)
                outcome = "OK"
            except grpc.RpcError as e:
                outcome = e.code().name
            with lock:
                counts[outcome] += 1
            if outcome != "OK":
                return


def http_client(port, deadline, counts, lock):
    body = json.dumps({"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28], "data": IMAGE}]})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    while time.time() < deadline:
        try:
            connection.request("POST", "/v2/models/lenet5/infer", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            outcome = "OK" if response.status == 200 else str(response.status)
        except (OSError, http.client.HTTPException) as e:
            outcome = type(e).__name__
        with lock:
            counts[outcome] += 1
        if outcome != "OK":
            return


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    http_port, grpc_port, threads, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["protoc", f"-I{ROOT}/src/tutti/proto", f"--python_out={out}", "grpc_predict_v2.proto"],
                       check=True)
        sys.path.insert(0, out)
        import grpc_predict_v2_pb2 as pb
    deadline = time.time() + seconds
    lock = threading.Lock()
    by_protocol = {"grpc": collections.Counter(), "http": collections.Counter()}
    workers = [threading.Thread(target=grpc_client, args=(grpc_port, deadline, pb, by_protocol["grpc"], lock))
               for _ in range(threads)]
    workers += [threading.Thread(target=http_client, args=(http_port, deadline, by_protocol["http"], lock))
                for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for protocol, counts in by_protocol.items():
        print(protocol, " ".join(f"{k}={v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
