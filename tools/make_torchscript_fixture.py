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
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "testdata", "torchscript_repo", "linear", "1")


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


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


if __name__ == "__main__":
    main()
