// TLS, mutual TLS, bearer tokens and the limits of the KServe frontends, over
// both protocols, with certificates made at run time.
#include <grpcpp/grpcpp.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/frontend/frontend_server.h"
#include "tutti/testing/frontend_fixture.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/test_certs.h"

namespace tutti {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
using ::testing::HasSubstr;
using testing::ClientResponse;
using testing::HttpTestClient;

constexpr char kInferBody[] =
    R"({"inputs":[{"name":"image","shape":[1,1,2,2],"datatype":"FP32","data":[1,2,3,4]}]})";
const std::string kInferenceToken = "inference-token-0123456789";
const std::string kAdminToken = "admin-token-0123456789abcdef";

// Who the HTTPS client is: the CA it trusts and its own certificate, if any.
struct ClientIdentity {
  std::string ca, cert, key;
};

// One HTTPS request on a fresh connection; status -1 when the connection,
// the handshake or the exchange failed.
ClientResponse HttpsRequest(int port, const ClientIdentity& who, const std::string& method,
                            const std::string& target, const std::string& body = "") {
  try {
    boost::asio::io_context ioc;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(who.ca);
    ctx.set_verify_mode(ssl::verify_peer);
    if (!who.cert.empty()) {
      ctx.use_certificate_chain_file(who.cert);
      ctx.use_private_key_file(who.key, ssl::context::pem);
    }
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    stream.set_verify_callback(ssl::host_name_verification("localhost"));
    beast::get_lowest_layer(stream).connect(
        boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    stream.handshake(ssl::stream_base::client);
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "localhost");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type]), ""};
  } catch (const std::exception&) {
    return {-1, "", "", ""};
  }
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<inference::GRPCInferenceService::Stub> GrpcStub(int port, std::shared_ptr<grpc::ChannelCredentials> c) {
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  return inference::GRPCInferenceService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port), std::move(c), args));
}

std::shared_ptr<grpc::ChannelCredentials> GrpcTls(const ClientIdentity& who) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadText(who.ca);
  if (!who.cert.empty()) {
    o.pem_cert_chain = ReadText(who.cert);
    o.pem_private_key = ReadText(who.key);
  }
  return grpc::SslCredentials(o);
}

inference::ModelInferRequest GrpcRequest() {
  inference::ModelInferRequest r;
  r.set_model_name("mlp");
  auto* in = r.add_inputs();
  in->set_name("image");
  in->set_datatype("FP32");
  for (int64_t d : {1, 1, 2, 2}) in->add_shape(d);
  for (int i = 0; i < 4; ++i) in->mutable_contents()->add_fp32_contents(static_cast<float>(i));
  return r;
}

grpc::StatusCode GrpcInfer(inference::GRPCInferenceService::Stub& stub, const std::string& token = "") {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  inference::ModelInferResponse response;
  return stub.ModelInfer(&context, GrpcRequest(), &response).error_code();
}

// The fake engine's "mlp" (testing/frontend_fixture.h) behind a FrontendServer with
// the options a test sets before Serve().
class SecurityTest : public testing::FakeEngineFrontendTest {
 protected:
  void SetUp() override {
    FakeEngineFrontendTest::SetUp();
    pki_ = testing::MakeTestPki(dir_.path());
    options_.http.port = 0;
    options_.grpc.port = 0;
  }
  void TearDown() override {
    if (server_) server_->Shutdown(kSecond);
  }
  void Serve() {
    absl::StatusOr<std::unique_ptr<FrontendServer>> s =
        FrontendServer::Start(engine_.get(), {{config_, 1}}, options_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  void UseTls(bool mutual) {
    options_.http.tls = TlsOptions{pki_.server_cert, pki_.server_key, mutual ? pki_.ca_cert : ""};
    options_.grpc.tls = options_.http.tls;
  }
  int64_t Answered() const { return engine_->Counters()[0].good + engine_->Counters()[0].late; }

  testing::TempDir dir_;
  testing::TestPki pki_;
  FrontendOptions options_;
  std::unique_ptr<FrontendServer> server_;
};

TEST_F(SecurityTest, TlsListenersServeTlsClientsAndRefusePlaintext) {
  UseTls(/*mutual=*/false);
  Serve();
  const ClientIdentity trusting{pki_.ca_cert};
  EXPECT_EQ(HttpsRequest(server_->port(), trusting, "GET", "/v2/health/ready").status, 200);
  ClientResponse r = HttpsRequest(server_->port(), trusting, "POST", "/v2/models/mlp/infer", kInferBody);
  EXPECT_EQ(r.status, 200) << r.body;
  // A client that does not trust the server's CA refuses it.
  EXPECT_EQ(HttpsRequest(server_->port(), {pki_.stranger_ca_cert}, "GET", "/v2/health/ready").status, -1);
  // Plaintext HTTP to the TLS port gets no HTTP answer.
  HttpTestClient plain(server_->port());
  EXPECT_ANY_THROW(plain.Request("GET", "/v2/health/ready"));

  EXPECT_EQ(GrpcInfer(*GrpcStub(server_->grpc_port(), GrpcTls(trusting))), grpc::StatusCode::OK);
  EXPECT_EQ(GrpcInfer(*GrpcStub(server_->grpc_port(), grpc::InsecureChannelCredentials())),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Answered(), 2);  // only the two TLS inferences ran
}

TEST_F(SecurityTest, MutualTlsRefusesClientsWithoutTheCasCertificate) {
  UseTls(/*mutual=*/true);
  Serve();
  const ClientIdentity member{pki_.ca_cert, pki_.client_cert, pki_.client_key};
  const ClientIdentity anonymous{pki_.ca_cert};
  const ClientIdentity stranger{pki_.ca_cert, pki_.stranger_cert, pki_.stranger_key};
  EXPECT_EQ(HttpsRequest(server_->port(), member, "POST", "/v2/models/mlp/infer", kInferBody).status, 200);
  EXPECT_EQ(HttpsRequest(server_->port(), anonymous, "POST", "/v2/models/mlp/infer", kInferBody).status, -1);
  EXPECT_EQ(HttpsRequest(server_->port(), stranger, "POST", "/v2/models/mlp/infer", kInferBody).status, -1);
  EXPECT_EQ(GrpcInfer(*GrpcStub(server_->grpc_port(), GrpcTls(member))), grpc::StatusCode::OK);
  EXPECT_NE(GrpcInfer(*GrpcStub(server_->grpc_port(), GrpcTls(anonymous))), grpc::StatusCode::OK);
  EXPECT_NE(GrpcInfer(*GrpcStub(server_->grpc_port(), GrpcTls(stranger))), grpc::StatusCode::OK);
  EXPECT_EQ(Answered(), 2);
}

TEST_F(SecurityTest, WrongTlsFilesAreClearErrorsAtStart) {
  options_.http.tls = TlsOptions{pki_.server_cert, pki_.client_key, ""};  // another certificate's key
  absl::StatusOr<std::unique_ptr<FrontendServer>> s = FrontendServer::Start(engine_.get(), {{config_, 1}}, options_);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("does not belong to the certificate"));
  options_.http.tls = TlsOptions{dir_.path() + "/missing.pem", pki_.server_key, ""};
  s = FrontendServer::Start(engine_.get(), {{config_, 1}}, options_);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("missing.pem"));
  options_.http.tls = TlsOptions{pki_.server_key, pki_.server_key, ""};  // a key is not a certificate
  EXPECT_FALSE(FrontendServer::Start(engine_.get(), {{config_, 1}}, options_).ok());
}

TEST_F(SecurityTest, HttpTokensGuardInferenceAndAdminCalls) {
  bool shutdown_requested = false;
  options_.frontend.access = {{kInferenceToken}, {kAdminToken}};
  options_.frontend.shutdown = [&] { shutdown_requested = true; };
  Serve();
  HttpTestClient c(server_->port());
  auto with = [](const std::string& token) {
    return std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer " + token}};
  };
  EXPECT_EQ(c.Request("GET", "/v2/health/live").status, 200);  // probes are open
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/ready").status, 200);
  ClientResponse r = c.Request("POST", "/v2/models/mlp/infer", kInferBody);
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr("Bearer"));
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", kInferBody, with("not-a-token-of-this-server")).status, 401);
  EXPECT_EQ(c.Request("GET", "/v2/models/unknown", "", {}).status, 401);  // no model names for strangers
  EXPECT_EQ(Answered(), 0);  // nothing ran
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", kInferBody, with(kInferenceToken)).status, 200);
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", kInferBody, with(kAdminToken)).status, 200);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp", "", with(kInferenceToken)).status, 200);
  // Administrative calls need the admin token.
  EXPECT_EQ(c.Request("GET", "/metrics", "", with(kInferenceToken)).status, 403);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/stats", "", with(kInferenceToken)).status, 403);
  EXPECT_EQ(c.Request("POST", "/v2/repository/index", "", with(kInferenceToken)).status, 403);
  EXPECT_EQ(c.Request("POST", "/v2/tutti/shutdown", "", with(kInferenceToken)).status, 403);
  EXPECT_FALSE(shutdown_requested);
  EXPECT_EQ(c.Request("GET", "/metrics", "", with(kAdminToken)).status, 200);
  r = c.Request("POST", "/v2/repository/index", "", with(kAdminToken));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"([{"name":"mlp","version":"1","state":"READY"}])");
  EXPECT_EQ(c.Request("POST", "/v2/tutti/shutdown", "", with(kAdminToken)).status, 200);
  EXPECT_TRUE(shutdown_requested);
  EXPECT_EQ(Answered(), 2);
}

TEST_F(SecurityTest, RemoteShutdownIsOffWithoutAdminTokens) {
  bool shutdown_requested = false;
  options_.frontend.shutdown = [&] { shutdown_requested = true; };
  Serve();
  HttpTestClient c(server_->port());
  EXPECT_EQ(c.Request("GET", "/metrics").status, 200);  // an open server stays open…
  EXPECT_EQ(c.Request("POST", "/v2/tutti/shutdown").status, 403);  // …but nobody may stop it remotely
  EXPECT_FALSE(shutdown_requested);
}

TEST_F(SecurityTest, GrpcTokensGuardInferenceAndAdminCalls) {
  options_.frontend.access = {{kInferenceToken}, {kAdminToken}};
  Serve();
  auto stub = GrpcStub(server_->grpc_port(), grpc::InsecureChannelCredentials());
  {
    grpc::ClientContext context;
    inference::ServerLiveResponse live;
    EXPECT_TRUE(stub->ServerLive(&context, {}, &live).ok());
  }
  EXPECT_EQ(GrpcInfer(*stub), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GrpcInfer(*stub, "not-a-token-of-this-server"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Answered(), 0);
  EXPECT_EQ(GrpcInfer(*stub, kInferenceToken), grpc::StatusCode::OK);
  auto index = [&](const std::string& token, inference::RepositoryIndexResponse* out) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    return stub->RepositoryIndex(&context, {}, out).error_code();
  };
  inference::RepositoryIndexResponse models;
  EXPECT_EQ(index(kInferenceToken, &models), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(index(kAdminToken, &models), grpc::StatusCode::OK);
  ASSERT_EQ(models.models_size(), 1);
  EXPECT_EQ(models.models(0).name(), "mlp");
  EXPECT_EQ(models.models(0).state(), "READY");
  {
    grpc::ClientContext context;
    inference::ServerMetadataResponse metadata;
    EXPECT_EQ(stub->ServerMetadata(&context, {}, &metadata).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(Answered(), 1);
}

TEST_F(SecurityTest, ConnectionsBeyondTheLimitGet503AndTheOthersKeepWorking) {
  options_.http.max_connections = 2;
  Serve();
  HttpTestClient a(server_->port()), b(server_->port());
  EXPECT_EQ(a.Request("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(b.Request("GET", "/v2/health/live").status, 200);
  HttpTestClient refused(server_->port());
  const std::string answer = refused.ReadUntilClosed();
  EXPECT_THAT(answer, HasSubstr("503 Service Unavailable"));
  EXPECT_THAT(answer, HasSubstr("too many connections"));
  EXPECT_EQ(a.Request("POST", "/v2/models/mlp/infer", kInferBody).status, 200);
  b.Close();  // frees a place (once the server sees the close)
  int status = 0;
  for (int attempt = 0; attempt < 500 && status != 200; ++attempt) {
    try {
      HttpTestClient c(server_->port());
      status = c.Request("GET", "/v2/health/live").status;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the close reaches the server unseen: retried
    }
  }
  EXPECT_EQ(status, 200);
}

TEST_F(SecurityTest, OversizedHeadersGet431) {
  options_.http.max_header_bytes = 4096;
  Serve();
  HttpTestClient c(server_->port());
  ClientResponse r = c.Request("GET", "/v2/health/live", "", {{"X-Padding", std::string(8192, 'x')}});
  EXPECT_EQ(r.status, 431);
  EXPECT_THAT(r.body, HasSubstr("4096"));
}

}  // namespace
}  // namespace tutti
