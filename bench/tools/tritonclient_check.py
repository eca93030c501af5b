#!/usr/bin/python3
"""Triton's Python client, tritonclient, against a running Tutti server.

  PYTHONPATH=~/.cache/tutti/tritonclient bench/tools/tritonclient_check.py HTTP_URL GRPC_URL
  PYTHONPATH=… bench/tools/tritonclient_check.py --strings HTTP_URL GRPC_URL

(tritonclient assembled by bench/tools/build_tritonclient.sh; a server of
demo_repository, as scripts/run.sh starts). Checks, over HTTP and gRPC:
get_model_config, infer (of FP32 and of typed tensors), get_inference_statistics, and stream_infer with a
sequence of the stateful gru_rows sent over one stream, whose answers must
come in order and end where the same sequence sent request by request over
HTTP ends. With --strings, a server of the TorchScript fixture `strings`
(testdata/torchscript_repo): BYTES (numpy object arrays), UINT16-64 and an
optional input left out, over both protocols. Prints a line per check;
exits 1 if any failed.
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


def strings(http_url, grpc_url):
    """The fixture `strings`: text upper-cased and measured, UINT16-64
    echoed, the optional mask summed (zeros when left out)."""
    text = np.array([[b"tutti", b"caf\xc3\xa9"], [b"a\x00b", b""]], dtype=np.object_)
    wide = {"in_uint16": np.array([[0, 65535], [1, 2]], dtype=np.uint16),
            "in_uint32": np.array([[4294967295, 3], [4, 5]], dtype=np.uint32),
            "in_uint64": np.array([[18446744073709551615, 6], [7, 8]], dtype=np.uint64)}
    for client, module, name in ((httpclient.InferenceServerClient(http_url), httpclient, "HTTP"),
                                 (grpcclient.InferenceServerClient(grpc_url), grpcclient, "gRPC")):
        for binary in ((False, True) if module is httpclient else (True,)):
            inputs = [module.InferInput("text", [2, 2], "BYTES")]
            if module is httpclient:
                inputs[0].set_data_from_numpy(text, binary_data=binary)
            else:
                inputs[0].set_data_from_numpy(text)
            for key, values in wide.items():
                inputs.append(module.InferInput(key, [2, 2], key.replace("in_", "").upper()))
                inputs[-1].set_data_from_numpy(values)
            answer = client.infer("strings", inputs)
            how = f"{name}{' binary' if binary and module is httpclient else ''}"
            upper = [[e.encode() if isinstance(e, str) else e for e in row] for row in answer.as_numpy("upper").tolist()]
            check(upper == [[b"TUTTI", b"CAF\xc3\xa9"], [b"A\x00B", b""]],
                  f"infer over {how}: BYTES in and out (numpy object arrays), any bytes")
            check(answer.as_numpy("length").tolist() == [[5, 5], [3, 0]], f"infer over {how}: BYTES lengths")
            check(all(np.array_equal(answer.as_numpy(k.replace("in_", "out_")), v) for k, v in wide.items()),
                  f"infer over {how}: UINT16, UINT32 and UINT64 come back whole")
            check(answer.as_numpy("mask_sum").tolist() == [[0], [0]],
                  f"infer over {how}: the optional mask left out reads as zeros")
        config = client.get_model_config("strings", **({} if module is httpclient else {"as_json": True}))
        config = config if module is httpclient else config["config"]
        check([i.get("optional", False) for i in config["input"]] == [False, False, False, False, True]
              and config["input"][0]["data_type"] == "TYPE_STRING",
              f"get_model_config over {name}: TYPE_STRING, and the mask optional")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--strings":
        sys.exit(strings(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
