#include "tutti/onnx/onnx_graph.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <initializer_list>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// A model of one graph, built node by node.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
  }
  onnx::NodeProto* Node(const std::string& op, std::initializer_list<std::string> in,
                        std::initializer_list<std::string> out) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    for (const std::string& i : in) n->add_input(i);
    for (const std::string& o : out) n->add_output(o);
    return n;
  }
  void Input(const std::string& name, std::initializer_list<int64_t> shape, int type = onnx::TensorProto::FLOAT) {
    Value(model_.mutable_graph()->add_input(), name, shape, type);
  }
  void Output(const std::string& name, int type = onnx::TensorProto::FLOAT) {
    Value(model_.mutable_graph()->add_output(), name, {}, type);
  }
  void Initializer(const std::string& name, const at::Tensor& t) {
    onnx::TensorProto* p = model_.mutable_graph()->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : t.sizes()) p->add_dims(d);
    const at::Tensor c = t.contiguous();
    p->set_raw_data(c.data_ptr(), c.numel() * sizeof(float));
  }
  const onnx::ModelProto& model() const { return model_; }

 private:
  static void Value(onnx::ValueInfoProto* v, const std::string& name, std::initializer_list<int64_t> shape,
                    int type) {
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : shape) {
      if (d < 0) {
        t->mutable_shape()->add_dim()->set_dim_param("batch");
      } else {
        t->mutable_shape()->add_dim()->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto model_;
};

void SetInts(onnx::NodeProto* n, const std::string& name, std::initializer_list<int64_t> values) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetString(onnx::NodeProto* n, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

// A small classifier: a convolution with uneven pads, ReLU, global pooling
// and a dense layer, against the same computation written with libtorch.
TEST(OnnxGraphTest, AClassifierComputesWhatLibtorchComputes) {
  at::manual_seed(7);
  const at::Tensor w = at::randn({4, 1, 3, 3}), b = at::randn({4}), fc = at::randn({3, 4}), fc_b = at::randn({3});
  ModelBuilder m;
  m.Input("x", {-1, 1, 8, 8});
  m.Initializer("w", w);
  m.Initializer("b", b);
  m.Initializer("fc", fc);
  m.Initializer("fc_b", fc_b);
  SetInts(m.Node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 0, 2, 1});  // top, left, bottom, right
  m.Node("Relu", {"c"}, {"r"});
  m.Node("GlobalAveragePool", {"r"}, {"p"});
  m.Node("Flatten", {"p"}, {"f"});
  onnx::NodeProto* gemm = m.Node("Gemm", {"f", "fc", "fc_b"}, {"y"});
  onnx::AttributeProto* trans = gemm->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
  m.Output("y");
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = OnnxGraph::Load(m.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->parameter_count(), 36 + 4 + 12 + 3);

  const at::Tensor x = at::randn({5, 1, 8, 8});
  absl::StatusOr<std::vector<at::Tensor>> y = (*graph)->Run({x});
  ASSERT_TRUE(y.ok()) << y.status();
  const at::Tensor padded = at::constant_pad_nd(x, {0, 1, 1, 2});  // left, right, top, bottom
  const at::Tensor want =
      at::linear(at::relu(at::conv2d(padded, w, b)).mean({2, 3}), fc, fc_b);
  ASSERT_EQ((*y)[0].sizes(), want.sizes());
  EXPECT_TRUE(at::allclose((*y)[0], want, 1e-5, 1e-6));
}

TEST(OnnxGraphTest, EveryUnsupportedOpIsNamedAtLoad) {
  ModelBuilder m;
  m.Input("x", {2});
  m.Node("NonMaxSuppression", {"x"}, {"a"});
  m.Node("Relu", {"a"}, {"b"});
  m.Node("Loop", {"b"}, {"y"});
  m.Output("y");
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = OnnxGraph::Load(m.model());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("unsupported ops Loop, NonMaxSuppression"));
}

TEST(OnnxGraphTest, AnUncoveredAttributeOrOpsetIsRefusedAtLoad) {
  ModelBuilder m;
  m.Input("x", {2, 2});
  m.Input("pads", {4}, onnx::TensorProto::INT64);
  SetString(m.Node("Pad", {"x", "pads"}, {"y"}), "mode", "reflect");
  m.Output("y");
  absl::StatusOr<std::unique_ptr<OnnxGraph>> graph = OnnxGraph::Load(m.model());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("Pad: mode reflect is not supported"));

  ModelBuilder newer(18);
  newer.Input("x", {2});
  newer.Node("Relu", {"x"}, {"y"});
  newer.Output("y");
  EXPECT_THAT(OnnxGraph::Load(newer.model()).status().message(), HasSubstr("opset 18"));

  ModelBuilder strings;
  strings.Input("s", {2}, onnx::TensorProto::STRING);
  strings.Node("Identity", {"s"}, {"y"});
  strings.Output("y", onnx::TensorProto::STRING);
  EXPECT_THAT(OnnxGraph::Load(strings.model()).status().message(), HasSubstr("datatype STRING"));
}

TEST(OnnxGraphTest, InputsThatDisagreeWithTheDeclarationAreNamed) {
  ModelBuilder m;
  m.Input("pixels", {-1, 3});
  m.Node("Relu", {"pixels"}, {"y"});
  m.Output("y");
  std::unique_ptr<OnnxGraph> graph = *OnnxGraph::Load(m.model());
  EXPECT_TRUE(graph->Run({at::zeros({7, 3})}).ok());  // any batch
  absl::StatusOr<std::vector<at::Tensor>> shape = graph->Run({at::zeros({7, 4})});
  EXPECT_THAT(shape.status().message(), HasSubstr("input 'pixels' has shape [7, 4]; the graph expects [-1, 3]"));
  absl::StatusOr<std::vector<at::Tensor>> type = graph->Run({at::zeros({7, 3}, at::kLong)});
  EXPECT_THAT(type.status().message(), HasSubstr("input 'pixels' is INT64; the graph expects FLOAT"));
  EXPECT_THAT(graph->Run({}).status().message(), HasSubstr("takes 1 inputs, got 0"));
}

// Softmax changed meaning at opset 13: before, over the input coerced to
// 2-D at `axis` (default 1); from 13, along `axis` (default -1).
TEST(OnnxGraphTest, SoftmaxFollowsItsOpset) {
  const at::Tensor x = at::arange(12, at::kFloat).reshape({2, 3, 2});
  for (int opset : {11, 13}) {
    ModelBuilder m(opset);
    m.Input("x", {2, 3, 2});
    m.Node("Softmax", {"x"}, {"y"});
    m.Output("y");
    absl::StatusOr<std::vector<at::Tensor>> y = (*OnnxGraph::Load(m.model()))->Run({x});
    ASSERT_TRUE(y.ok()) << y.status();
    const at::Tensor want = opset < 13 ? at::softmax(x.reshape({2, 6}), 1).reshape({2, 3, 2}) : at::softmax(x, -1);
    EXPECT_TRUE(at::allclose((*y)[0], want)) << "opset " << opset;
  }
}

TEST(OnnxGraphTest, AMissingFileAndNotAModelAreTold) {
  EXPECT_EQ(OnnxGraph::LoadFile("/no/such/model.onnx").status().code(), absl::StatusCode::kNotFound);
  const std::string junk = ::testing::TempDir() + "/junk.onnx";
  std::ofstream(junk) << "not an onnx model";
  EXPECT_EQ(OnnxGraph::LoadFile(junk).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tutti
