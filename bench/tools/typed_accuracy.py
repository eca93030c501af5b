#!/usr/bin/python3
"""Serves Fashion-MNIST's 10,000 test images, as raw UINT8 pixels, to a
model of one UINT8 input "pixels" [28, 28] and outputs "logits" FP32 [10]
and "confidence" FP32 [1] (the demo's calibrated_lenet5) on a running
`tutti serve`, in batches of 32, over four encodings: HTTP JSON data, HTTP
binary data, gRPC raw_input_contents and gRPC uint_contents. Prints one
line per encoding:
    ENCODING ACCURACY MEAN_CONFIDENCE ECE ECE_UNCALIBRATED
(ECE: expected calibration error of the served confidence, 15 bins;
ECE_UNCALIBRATED: the same of max softmax(logits), temperature 1).
    typed_accuracy.py HOST HTTP_PORT GRPC_PORT MODEL
gRPC messages come from Tutti's own copy of the KServe v2 proto
(src/tutti/proto), compiled here with protoc.
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
DATA = "/usr/share/datasets/fashion-mnist"
BATCH = 32


def test_set():
    with gzip.open(f"{DATA}/t10k-images-idx3-ubyte.gz") as f:
        pixels = numpy.frombuffer(f.read(), dtype=numpy.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(f"{DATA}/t10k-labels-idx1-ubyte.gz") as f:
        labels = numpy.frombuffer(f.read(), dtype=numpy.uint8, offset=8)
    return pixels, labels


def split(body, json_length):
    """The JSON header of an answer and, per output, its binary data."""
    header = json.loads(body[:json_length])
    out, at = {}, json_length
    for o in header["outputs"]:
        size = o["parameters"]["binary_data_size"]
        out[o["name"]] = body[at:at + size]
        at += size
    return out


def http(host, port, model, x, binary):
    url = f"http://{host}:{port}/v2/models/{model}/infer"
    tensor = {"name": "pixels", "datatype": "UINT8", "shape": list(x.shape)}
    if not binary:
        tensor["data"] = x.flatten().tolist()
        request = urllib.request.Request(url, json.dumps({"inputs": [tensor]}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as r:
            outputs = {o["name"]: numpy.array(o["data"], dtype=numpy.float32) for o in json.load(r)["outputs"]}
        return outputs["logits"].reshape(-1, 10), outputs["confidence"]
    tensor["parameters"] = {"binary_data_size": x.size}
    header = json.dumps({"inputs": [tensor], "parameters": {"binary_data_output": True}}).encode()
    request = urllib.request.Request(url, header + x.tobytes(), {"Content-Type": "application/octet-stream",
                                                                 "Inference-Header-Content-Length": str(len(header))})
    with urllib.request.urlopen(request) as r:
        outputs = split(r.read(), int(r.headers["Inference-Header-Content-Length"]))
    return (numpy.frombuffer(outputs["logits"], dtype=numpy.float32).reshape(-1, 10),
            numpy.frombuffer(outputs["confidence"], dtype=numpy.float32))


def grpc_infer(pb, call, model, x, raw):
    request = pb.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="pixels", datatype="UINT8", shape=list(x.shape))
    if raw:
        request.raw_input_contents.append(x.tobytes())
    else:
        tensor.contents.uint_contents.extend(x.flatten().tolist())
    response = call(request, timeout=60)
    outputs = {o.name: response.raw_output_contents[i] for i, o in enumerate(response.outputs)}
    return (numpy.frombuffer(outputs["logits"], dtype=numpy.float32).reshape(-1, 10),
            numpy.frombuffer(outputs["confidence"], dtype=numpy.float32))


def ece(confidence, correct, bins=15):
    which = numpy.clip((confidence * bins).astype(int), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            total += abs(confidence[mask].mean() - correct[mask].mean()) * mask.sum() / len(confidence)
    return total


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    host, http_port, grpc_port, model = sys.argv[1:]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["protoc", f"-I{ROOT}/src/tutti/proto", f"--python_out={out}", "grpc_predict_v2.proto"],
                       check=True)
        sys.path.insert(0, out)
        import grpc_predict_v2_pb2 as pb
    pixels, labels = test_set()
    channel = grpc.insecure_channel(f"{host}:{grpc_port}")
    call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                               request_serializer=pb.ModelInferRequest.SerializeToString,
                               response_deserializer=pb.ModelInferResponse.FromString)
    encodings = {
        "http-json": lambda x: http(host, http_port, model, x, False),
        "http-binary": lambda x: http(host, http_port, model, x, True),
        "grpc-raw": lambda x: grpc_infer(pb, call, model, x, True),
        "grpc-contents": lambda x: grpc_infer(pb, call, model, x, False),
    }
    for name, infer in encodings.items():
        logits, confidence = [], []
        for begin in range(0, len(labels), BATCH):
            batch_logits, conf = infer(pixels[begin:begin + BATCH])
            logits.append(batch_logits)
            confidence.append(conf)
        logits, confidence = numpy.concatenate(logits).astype(numpy.float64), numpy.concatenate(confidence)
        correct = (logits.argmax(1) == labels).astype(numpy.float64)
        e = numpy.exp(logits - logits.max(1, keepdims=True))
        plain = (e / e.sum(1, keepdims=True)).max(1)
        print(f"{name} {correct.mean():.4f} {confidence.mean():.4f} {ece(confidence, correct):.4f} "
              f"{ece(plain, correct):.4f}", flush=True)


if __name__ == "__main__":
    main()
