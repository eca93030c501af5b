#!/usr/bin/python3
"""Exports models to ONNX with Debian's python3-torch (torch.onnx.export, no
network), for Tutti's ONNX import (platform onnx).

    /usr/bin/python3 tools/export_onnx.py fixture
        testdata/onnx_repo/linear: the TorchScript fixture's linear model
        (testdata/torchscript_repo), the same weights, as ONNX; and
        testdata/onnx_repo/typed: a graph of one input and output per
        datatype libtorch has (see typed_fixture); and
        testdata/onnx_repo/variable: a graph of variable length served
        with shape buckets (see variable_fixture).
    /usr/bin/python3 tools/export_onnx.py torchvision OUT
        torchvision's ResNet18 and MobileNetV2 (random weights, fixed seed)
        in two layouts: OUT/tests/<name>/ as ONNX's node tests lay out
        (model.onnx, test_data_set_0/input_0.pb and output_0.pb: a batch of 2
        and torch's own outputs for it; `tutti onnx conformance --data
        OUT/tests` checks them) and OUT/repository/<name>/1/ as a model
        repository (`tutti profile --repo OUT/repository`).
    /usr/bin/python3 tools/export_onnx.py demo REPO
        REPO/<name>_onnx/1/: ONNX twins of the demo's built-in mlp, lenet5
        and resnet_small, exported from the weights `tutti demo` trained
        (PyTorch modules mirroring src/tutti/models/architectures.cc;
        bench/onnx_models.sh serves both and compares their answers).

Each export uses opset 13 and a dynamic batch axis, so the twins batch.
"""
import os
import shutil
import sys

import numpy
import onnx
import onnx.numpy_helper
import torch

from make_torchscript_fixture import Linear  # this folder's

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
OPSET = 13
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530  # architectures.cc: Normalize


def export(model, example, path, input_name, output_name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    model.eval()
    torch.onnx.export(model, (example,), path, opset_version=OPSET, input_names=[input_name],
                      output_names=[output_name], dynamic_axes={input_name: {0: "batch"}, output_name: {0: "batch"}})


def write_test(folder, model_path, inputs, outputs):
    """ONNX's node-test layout: model.onnx and test_data_set_0/."""
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    shutil.copyfile(model_path, os.path.join(folder, "model.onnx"))
    for prefix, tensor in (("input_0", inputs), ("output_0", outputs)):
        with open(os.path.join(data, prefix + ".pb"), "wb") as f:
            f.write(onnx.numpy_helper.from_array(tensor.detach().numpy()).SerializeToString())


def write_config(folder, text):
    with open(os.path.join(folder, "config.yaml"), "w") as f:
        f.write(text)


def fixture():
    model = Linear()
    model.load_state_dict(torch.jit.load(os.path.join(ROOT, "testdata/torchscript_repo/linear/1/model.pt")).state_dict())
    out = os.path.join(ROOT, "testdata/onnx_repo/linear/1")
    export(model, torch.zeros(1, 1, 28, 28), os.path.join(out, "model.onnx"), "image", "logits")
    write_config(out, "name: linear\nplatform: onnxruntime_onnx\ntask: fashion-mnist\nmax_batch_size: 8\n"
                      "inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]\n"
                      "outputs: [{name: logits, datatype: FP32, shape: [10]}]\n")
    print("wrote", out)
    typed_fixture()


# The datatypes libtorch has (the torch executor's), as ONNX and config name them.
TYPED = (("BOOL", onnx.TensorProto.BOOL), ("UINT8", onnx.TensorProto.UINT8), ("INT8", onnx.TensorProto.INT8),
         ("INT16", onnx.TensorProto.INT16), ("INT32", onnx.TensorProto.INT32), ("INT64", onnx.TensorProto.INT64),
         ("FP16", onnx.TensorProto.FLOAT16), ("FP32", onnx.TensorProto.FLOAT), ("FP64", onnx.TensorProto.DOUBLE))


def typed_fixture():
    """testdata/onnx_repo/typed: one input per datatype, each echoed to an
    output, and `count`: how many of the BOOL input's elements are true."""
    from onnx import helper
    inputs, outputs, nodes, config_in, config_out = [], [], [], [], []
    for name, proto in TYPED:
        low = name.lower()
        inputs.append(helper.make_tensor_value_info(f"in_{low}", proto, ["batch", 2]))
        outputs.append(helper.make_tensor_value_info(f"out_{low}", proto, ["batch", 2]))
        nodes.append(helper.make_node("Identity", [f"in_{low}"], [f"out_{low}"]))
        config_in.append(f"  - {{name: in_{low}, datatype: {name}, shape: [2]}}")
        config_out.append(f"  - {{name: out_{low}, datatype: {name}, shape: [2]}}")
    nodes.append(helper.make_node("Cast", ["in_bool"], ["mask"], to=onnx.TensorProto.INT64))
    nodes.append(helper.make_node("ReduceSum", ["mask", "axes"], ["count"], keepdims=1))
    outputs.append(helper.make_tensor_value_info("count", onnx.TensorProto.INT64, ["batch", 1]))
    config_out.append("  - {name: count, datatype: INT64, shape: [1]}")
    save_graph_fixture("typed", nodes, inputs, outputs,
                       "inputs:\n" + "\n".join(config_in) + "\noutputs:\n" + "\n".join(config_out) + "\n")
    variable_fixture()


def save_graph_fixture(name, nodes, inputs, outputs, tensors_yaml):
    """testdata/onnx_repo/NAME/1: a graph of `nodes` (with an initializer
    `axes` = [1] for its reductions), checked by ONNX, and its config."""
    from onnx import helper
    axes = helper.make_tensor("axes", onnx.TensorProto.INT64, [1], [1])
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    out = os.path.join(ROOT, "testdata/onnx_repo", name, "1")
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    write_config(out, f"name: {name}\nplatform: onnxruntime_onnx\nmax_batch_size: 8\n" + tensors_yaml)
    print("wrote", out)


def variable_fixture():
    """testdata/onnx_repo/variable: token ids INT64 [-1] and a BOOL mask of
    the same length in; `total`, the sum of the ids the mask keeps, and
    `ids`, the ids echoed, out. Requests are padded to shape buckets 4 and 8
    (zero ids, false mask), which leave `total` unchanged."""
    from onnx import helper
    inputs = [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, ["batch", "length"]),
              helper.make_tensor_value_info("mask", onnx.TensorProto.BOOL, ["batch", "length"])]
    outputs = [helper.make_tensor_value_info("total", onnx.TensorProto.INT64, ["batch", 1]),
               helper.make_tensor_value_info("echo", onnx.TensorProto.INT64, ["batch", "length"])]
    nodes = [helper.make_node("Cast", ["mask"], ["keep"], to=onnx.TensorProto.INT64),
             helper.make_node("Mul", ["ids", "keep"], ["kept"]),
             helper.make_node("ReduceSum", ["kept", "axes"], ["total"], keepdims=1),
             helper.make_node("Identity", ["ids"], ["echo"])]
    save_graph_fixture("variable", nodes, inputs, outputs,
                       "inputs:\n  - {name: ids, datatype: INT64, shape: [-1]}\n"
                       "  - {name: mask, datatype: BOOL, shape: [-1]}\n"
                       "outputs:\n  - {name: total, datatype: INT64, shape: [1]}\n"
                       "  - {name: echo, datatype: INT64, shape: [-1]}\n"
                       "shape_buckets: [4, 8]\n")


def torchvision_models(out):
    import torchvision
    torch.manual_seed(20261129)
    for name, build in (("resnet18", torchvision.models.resnet18), ("mobilenet_v2", torchvision.models.mobilenet_v2)):
        model = build().eval()
        repo = os.path.join(out, "repository", name, "1")
        export(model, torch.zeros(1, 3, 224, 224), os.path.join(repo, "model.onnx"), "input", "logits")
        write_config(repo, f"name: {name}\nplatform: onnxruntime_onnx\nmax_batch_size: 16\n"
                           "inputs: [{name: input, datatype: FP32, shape: [3, 224, 224]}]\n"
                           "outputs: [{name: logits, datatype: FP32, shape: [1000]}]\n")
        x = torch.randn(2, 3, 224, 224)
        with torch.no_grad():
            write_test(os.path.join(out, "tests", name), os.path.join(repo, "model.onnx"), x, model(x))
        print("wrote", name)


def normalize(x):
    return (x - PIXEL_MEAN) / PIXEL_STD


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(784, 200), torch.nn.Linear(200, 100), torch.nn.Linear(100, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(normalize(x).flatten(1)))
        return self.fc3(torch.relu(self.fc2(x)))


class LeNet5(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(400, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(normalize(x))), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2).flatten(1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def conv3x3(cin, cout, stride):
    return torch.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, cout, stride), torch.nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = conv3x3(cout, cout, 1), torch.nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNetSmall(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.bn = conv3x3(1, 16, 1), torch.nn.BatchNorm2d(16)
        self.block1, self.block2, self.block3 = BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn(self.stem(normalize(x)))), 2)
        x = self.block3(self.block2(self.block1(x)))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(x, (1, 1)).flatten(1))


def test_images(count):
    """The first `count` Fashion-MNIST test images, as floats in [0, 1]."""
    import gzip
    path = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
    with gzip.open(path) as f:
        raw = f.read()
    images = numpy.frombuffer(raw, dtype=numpy.uint8, offset=16)[:count * 784]
    return torch.from_numpy(images.astype(numpy.float32) / 255.0).reshape(count, 1, 28, 28)


def demo(repo):
    x = test_images(1)
    for name, build in (("mlp", Mlp), ("lenet5", LeNet5), ("resnet_small", ResNetSmall)):
        source = os.path.join(repo, name, "1")
        model = build()
        model.load_state_dict(torch.jit.load(os.path.join(source, "model.pt")).state_dict())
        model.eval()
        out = os.path.join(repo, name + "_onnx", "1")
        export(model, x[:1], os.path.join(out, "model.onnx"), "image", "logits")
        with open(os.path.join(source, "config.yaml")) as f:
            lines = f.read().splitlines()
        # The built-in's config as platform onnx: its tensors, batch and
        # accuracy; no task (not a variant for model-less requests) and no
        # profile (`tutti profile` measures the twin's own).
        config, keep = [], False
        for line in lines:
            if not line.startswith(" "):
                keep = line.split(":", 1)[0] in ("max_batch_size", "inputs", "outputs", "accuracy",
                                                 "latency_objective_ms")
            if keep:
                config.append(line)
        write_config(out, f"name: {name}_onnx\nplatform: onnxruntime_onnx\n" + "\n".join(config) + "\n")
        print("wrote", out)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "fixture":
        fixture()
    elif len(sys.argv) == 3 and sys.argv[1] == "torchvision":
        torchvision_models(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "demo":
        demo(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
