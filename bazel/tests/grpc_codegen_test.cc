// Checks that gyre_cc_grpc_library output links against the system gRPC and that a
// generated stub can make a call over loopback to a generated service.

#include <memory>
#include <string>

#include "bazel/tests/echo.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace gyre {
namespace {

class EchoService final : public bazel::tests::Echo::Service {
  grpc::Status Say(grpc::ServerContext*, const bazel::tests::EchoRequest* request,
                   bazel::tests::EchoReply* reply) override {
    if (request->text().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "empty text");
    }
    reply->set_text("echo: " + request->text());
    reply->set_length(static_cast<int>(request->text().size()));
    return grpc::Status::OK;
  }
};

class GrpcCodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = bazel::tests::Echo::NewStub(channel_);
  }
  void TearDown() override { server_->Shutdown(); }

  EchoService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<bazel::tests::Echo::Stub> stub_;
};

TEST_F(GrpcCodegenTest, CallOverLoopbackReturnsTheReply) {
  grpc::ClientContext context;
  bazel::tests::EchoRequest request;
  request.set_text("hello");
  bazel::tests::EchoReply reply;
  grpc::Status status = stub_->Say(&context, request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.text(), "echo: hello");
  EXPECT_EQ(reply.length(), 5);
}

TEST_F(GrpcCodegenTest, ServerErrorReachesTheClient) {
  grpc::ClientContext context;
  bazel::tests::EchoReply reply;
  grpc::Status status = stub_->Say(&context, bazel::tests::EchoRequest(), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "empty text");
}

}  // namespace
}  // namespace gyre
