"""Dependency lists the transports (//transport/nio, //transport/oio) share."""

# What a transport library builds on: the channel layer and //transport's socket base.
TRANSPORT_DEPS = [
    "//channel",
    "//channel:byte_buf",
    "//concurrent",
    "//concurrent:concurrent_internal",
    "//transport:socket_channel",
    "//transport:socket_channel_impl",
    "//transport:socket_util",
    "@com_google_absl//absl/base:core_headers",
    "@com_google_absl//absl/container:flat_hash_map",
    "@com_google_absl//absl/functional:any_invocable",
    "@com_google_absl//absl/status",
    "@com_google_absl//absl/status:statusor",
    "@com_google_absl//absl/strings",
    "@com_google_absl//absl/time",
]

# What a transport's tests link besides the transport itself.
TRANSPORT_TEST_DEPS = [
    "//channel",
    "//channel:byte_buf",
    "//concurrent",
    "//testing",
    "//testing:budget",
    "@com_google_absl//absl/strings",
    "@com_google_absl//absl/time",
    "@com_google_googletest//:gtest_main",
]
