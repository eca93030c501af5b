#!/usr/bin/python3
"""Triton's Python client, tritonclient, against a running Tutti server.

  PYTHONPATH=~/.cache/tutti/tritonclient bench/tools/tritonclient_check.py HTTP_URL GRPC_URL

(tritonclient assembled by bench/tools/build_tritonclient.sh; a server of
demo_repository, as scripts/run.sh starts). Checks, over HTTP and gRPC:
get_model_config, infer (of FP32 and of typed tensors), get_inference_statistics, and stream_infer with a
sequence of the stateful gru_rows sent over one stream, whose answers must
come in order and end where the same sequence sent request by request over
HTTP ends. Prints a line per check; exits 1 if any failed.
"""
import queue
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def main(http_url, grpc_url):
    h = httpclient.InferenceServerClient(http_url)
    g = grpcclient.InferenceServerClient(grpc_url)
    rng = np.random.default_rng(1)

    hc = h.get_model_config("lenet5")
    gc = g.get_model_config("lenet5", as_json=True)["config"]
    check(hc["max_batch_size"] == int(gc["max_batch_size"])
          and hc["input"][0]["dims"] == [int(d) for d in gc["input"][0]["dims"]]
          and gc["input"][0]["data_type"] == "TYPE_FP32" and "dynamic_batching" in gc,
          "get_model_config: lenet5's over HTTP and gRPC agree (FP32 input, dynamic batching)")
    check("sequence_batching" in g.get_model_config("gru_rows", as_json=True)["config"],
          "get_model_config: gru_rows has sequence batching")

    image = rng.random((1, 1, 28, 28), dtype=np.float32)
    hi = httpclient.InferInput("image", list(image.shape), "FP32")
    hi.set_data_from_numpy(image)
    gi = grpcclient.InferInput("image", list(image.shape), "FP32")
    gi.set_data_from_numpy(image)
    a = h.infer("lenet5", [hi]).as_numpy("logits")
    b = g.infer("lenet5", [gi]).as_numpy("logits")
    check(a.shape == (1, 10) and np.array_equal(a, b), "infer: lenet5 answers alike over HTTP and gRPC")

    # Typed tensors: UINT8 pixels in; FP32 logits and confidence out.
    pixels = (image.reshape(1, 28, 28) * 255).astype(np.uint8)
    typed = []
    for client, module in ((h, httpclient), (g, grpcclient)):
        tensor = module.InferInput("pixels", list(pixels.shape), "UINT8")
        tensor.set_data_from_numpy(pixels)
        outputs = [module.InferRequestedOutput("logits"), module.InferRequestedOutput("confidence")]
        answer = client.infer("calibrated_lenet5", [tensor], outputs=outputs)
        typed.append((answer.as_numpy("logits"), answer.as_numpy("confidence")))
    (la, ca), (lb, cb) = typed
    check(la.shape == (1, 10) and ca.shape == (1, 1) and np.array_equal(la, lb) and np.array_equal(ca, cb)
          and 0.1 <= float(ca[0, 0]) <= 1,
          "infer: calibrated_lenet5 takes UINT8 and answers logits and a confidence alike over HTTP and gRPC")

    hs = h.get_inference_statistics("lenet5")["model_stats"][0]
    gs = g.get_inference_statistics("lenet5", as_json=True)["model_stats"][0]
    for name, s in (("HTTP", hs), ("gRPC", gs)):
        stats = s["inference_stats"]
        check(int(stats["success"]["count"]) >= 2 and int(stats["success"]["ns"]) > 0
              and int(s["inference_count"]) >= 2 and int(s["last_inference"]) > 0,
              f"get_inference_statistics over {name}: lenet5's requests counted, with their time")

    rows = rng.random((7, 1, 4, 28), dtype=np.float32)  # an image's 28 rows, 4 at a time
    answers = queue.Queue()
    g.start_stream(callback=lambda result, error: answers.put((result, error)))
    for i in range(7):
        step = grpcclient.InferInput("rows", [1, 4, 28], "FP32")
        step.set_data_from_numpy(rows[i])
        g.async_stream_infer("gru_rows", [step], request_id=str(i), sequence_id=1001,
                             sequence_start=i == 0, sequence_end=i == 6)
    streamed = [answers.get(timeout=30) for _ in range(7)]
    check(all(error is None for _, error in streamed), "stream_infer: a sequence of 7 answered without error")
    check([r.get_response().id for r, _ in streamed] == [str(i) for i in range(7)],
          "stream_infer: the sequence's answers come in the order sent")
    for i in range(7):
        step = httpclient.InferInput("rows", [1, 4, 28], "FP32")
        step.set_data_from_numpy(rows[i])
        last = h.infer("gru_rows", [step], sequence_id=2002, sequence_start=i == 0, sequence_end=i == 6)
    check(np.allclose(streamed[-1][0].as_numpy("logits"), last.as_numpy("logits"), atol=1e-5),
          "stream_infer: the sequence ends where the same sequence over HTTP ends")
    g.async_stream_infer("no_such_model", [gi])
    _, error = answers.get(timeout=30)
    check(error is not None and "no_such_model" in str(error),
          "stream_infer: an error comes back on the stream, naming the model")
    g.stop_stream()
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
