#!/usr/bin/python3
"""Writes the TorchScript test fixture: a tiny model repository under
testdata/torchscript_repo/ that Tutti's C++ tests load with torch::jit::load.

Run with Debian's python3-torch (the same libtorch 1.13 as libtorch-dev):
    sudo apt-get install python3-torch
    /usr/bin/python3 tools/make_torchscript_fixture.py

The model, `linear`, is one fully connected layer on flattened 28x28 images
(784 -> 10) with fixed weights. It is linear on purpose: ParM's decoder must
reconstruct its outputs exactly. expected_outputs.txt holds its outputs for
the two inputs described there, computed here in PyTorch, so the C++ test
checks that libtorch in Tutti computes the same numbers.

The model `strings` takes the datatypes ONNX graphs cannot: BYTES text (as
List[str], upper-cased and measured), UINT16-64 (echoed), and an optional
INT32 mask (summed).
"""
import os
from typing import List, Tuple

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "testdata", "torchscript_repo", "linear", "1")


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


class Strings(torch.nn.Module):
    def forward(self, text: List[str], in_uint16: torch.Tensor, in_uint32: torch.Tensor, in_uint64: torch.Tensor,
                mask: torch.Tensor) -> Tuple[List[str], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                             torch.Tensor]:
        upper = [s.upper() for s in text]
        length = torch.tensor([len(s) for s in text], dtype=torch.int64).reshape(in_uint16.shape[0], 2)
        return upper, length, in_uint16, in_uint32, in_uint64, mask.sum(1, keepdim=True)


STRINGS_CONFIG = """name: strings
platform: torchscript
max_batch_size: 8
inputs:
  - {name: text, datatype: BYTES, shape: [2], max_element_bytes: 16}
  - {name: in_uint16, datatype: UINT16, shape: [2]}
  - {name: in_uint32, datatype: UINT32, shape: [2]}
  - {name: in_uint64, datatype: UINT64, shape: [2]}
  - {name: mask, datatype: INT32, shape: [2], optional: true}
outputs:
  - {name: upper, datatype: BYTES, shape: [2], max_element_bytes: 16}
  - {name: length, datatype: INT64, shape: [2]}
  - {name: out_uint16, datatype: UINT16, shape: [2]}
  - {name: out_uint32, datatype: UINT32, shape: [2]}
  - {name: out_uint64, datatype: UINT64, shape: [2]}
  - {name: mask_sum, datatype: INT64, shape: [1]}
"""


def strings_fixture():
    out = os.path.join(HERE, "..", "testdata", "torchscript_repo", "strings", "1")
    os.makedirs(out, exist_ok=True)
    torch.jit.script(Strings().eval()).save(os.path.join(out, "model.pt"))
    with open(os.path.join(out, "config.yaml"), "w") as f:
        f.write(STRINGS_CONFIG)
    print("wrote", os.path.normpath(out))


def fixture_inputs(batch):
    """Item i, element j = ((7 * i + j) % 256) / 255, as the C++ test builds it."""
    i = torch.arange(batch).unsqueeze(1)
    j = torch.arange(784).unsqueeze(0)
    return (((7 * i + j) % 256).float() / 255.0).reshape(batch, 1, 28, 28)


def main():
    torch.manual_seed(20261121)
    model = Linear().eval()
    os.makedirs(OUT, exist_ok=True)
    torch.jit.script(model).save(os.path.join(OUT, "model.pt"))
    with open(os.path.join(OUT, "config.yaml"), "w") as f:
        f.write(
            "name: linear\n"
            "platform: torchscript\n"
            "task: fashion-mnist\n"
            "max_batch_size: 8\n"
            "inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]\n"
            "outputs: [{name: logits, datatype: FP32, shape: [10]}]\n")
    with torch.no_grad():
        y = model(fixture_inputs(2))
    with open(os.path.join(OUT, "..", "..", "expected_outputs.txt"), "w") as f:
        f.write("# linear model outputs for fixture_inputs(2), one item per line\n")
        for row in y.tolist():
            f.write(" ".join("%.9g" % v for v in row) + "\n")
    print("wrote", os.path.normpath(OUT))
    strings_fixture()


if __name__ == "__main__":
    main()
