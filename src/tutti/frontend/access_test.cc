#include "tutti/frontend/access.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

const std::string kInference = "inference-token-0123456789";
const std::string kAdmin = "admin-token-0123456789abcdef";

absl::StatusCode Code(const AccessPolicy& p, Api api, const std::string& authorization) {
  return p.Check(api, authorization).code();
}

TEST(AccessPolicyTest, OpenWithoutTokensExceptShutdown) {
  AccessPolicy open({});
  for (Api api : {Api::kHealth, Api::kMetadata, Api::kInference, Api::kAdmin}) {
    EXPECT_EQ(Code(open, api, ""), absl::StatusCode::kOk);
  }
  EXPECT_EQ(Code(open, Api::kShutdown, ""), absl::StatusCode::kPermissionDenied);
}

TEST(AccessPolicyTest, TokensByKindOfCall) {
  AccessPolicy p({{kInference}, {kAdmin}});
  const std::string inference = "Bearer " + kInference, admin = "Bearer " + kAdmin;
  EXPECT_EQ(Code(p, Api::kHealth, ""), absl::StatusCode::kOk);
  for (Api api : {Api::kMetadata, Api::kInference, Api::kAdmin, Api::kShutdown}) {
    EXPECT_EQ(Code(p, api, ""), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(Code(p, api, "Bearer " + kInference + "x"), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(Code(p, api, kInference), absl::StatusCode::kUnauthenticated);  // no scheme
    EXPECT_EQ(Code(p, api, admin), absl::StatusCode::kOk);
  }
  EXPECT_EQ(Code(p, Api::kInference, inference), absl::StatusCode::kOk);
  EXPECT_EQ(Code(p, Api::kMetadata, inference), absl::StatusCode::kOk);
  EXPECT_EQ(Code(p, Api::kAdmin, inference), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Code(p, Api::kShutdown, inference), absl::StatusCode::kPermissionDenied);
}

TEST(AccessPolicyTest, InferenceTokensAloneGuardAdminCallsTooButNeverShutdown) {
  AccessPolicy p({{kInference}, {}});
  EXPECT_EQ(Code(p, Api::kAdmin, ""), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Code(p, Api::kAdmin, "Bearer " + kInference), absl::StatusCode::kOk);
  EXPECT_EQ(Code(p, Api::kShutdown, "Bearer " + kInference), absl::StatusCode::kPermissionDenied);
}

TEST(ReadTokenFileTest, OnePerLineWithCommentsAndClearErrors) {
  testing::TempDir dir;
  absl::StatusOr<std::vector<std::string>> tokens =
      ReadTokenFile(dir.WriteFile("ok", "# inference\n" + kInference + "\n\n  " + kAdmin + "  \n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(*tokens, (std::vector<std::string>{kInference, kAdmin}));
  EXPECT_THAT(ReadTokenFile(dir.WriteFile("short", "abc\n")).status().message(), HasSubstr("line 1"));
  EXPECT_THAT(ReadTokenFile(dir.WriteFile("empty", "# none\n")).status().message(), HasSubstr("holds no token"));
  EXPECT_EQ(ReadTokenFile(dir.path() + "/missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tutti
