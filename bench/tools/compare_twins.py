#!/usr/bin/python3
"""Sends the same 16 Fashion-MNIST test images to two models of a running
`tutti serve`, over HTTP (KServe v2 JSON) and over gRPC, and prints the
largest absolute difference between their outputs on each protocol:
    compare_twins.py HOST HTTP_PORT GRPC_PORT MODEL TWIN
prints "D_HTTP | D_GRPC". gRPC messages come from Tutti's own copy of the
KServe v2 proto (src/tutti/proto), compiled here with protoc.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import grpc
import numpy

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def images(count):
    with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
        raw = f.read()
    return numpy.frombuffer(raw, dtype=numpy.uint8, offset=16)[:count * 784].astype(numpy.float32) / 255.0


def http(host, port, model, x):
    body = {"inputs": [{"name": "image", "datatype": "FP32", "shape": [len(x) // 784, 1, 28, 28],
                        "data": x.tolist()}]}
    request = urllib.request.Request(f"http://{host}:{port}/v2/models/{model}/infer", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as r:
        return numpy.array(json.load(r)["outputs"][0]["data"], dtype=numpy.float64)


def grpc_infer(pb, host, port, model, x):
    request = pb.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="image", datatype="FP32", shape=[len(x) // 784, 1, 28, 28])
    tensor.contents.fp32_contents.extend(x.tolist())
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                   request_serializer=pb.ModelInferRequest.SerializeToString,
                                   response_deserializer=pb.ModelInferResponse.FromString)
        response = call(request, timeout=30)
    return numpy.frombuffer(response.raw_output_contents[0], dtype=numpy.float32).astype(numpy.float64)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    host, http_port, grpc_port, model, twin = sys.argv[1:]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["protoc", f"-I{ROOT}/src/tutti/proto", f"--python_out={out}", "grpc_predict_v2.proto"],
                       check=True)
        sys.path.insert(0, out)
        import grpc_predict_v2_pb2 as pb
    x = images(16)
    d_http = numpy.abs(http(host, http_port, model, x) - http(host, http_port, twin, x)).max()
    d_grpc = numpy.abs(grpc_infer(pb, host, grpc_port, model, x) - grpc_infer(pb, host, grpc_port, twin, x)).max()
    print(f"{d_http:.2e} | {d_grpc:.2e}")


if __name__ == "__main__":
    main()
