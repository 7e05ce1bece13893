"""Build macros for gyre's own targets.

Every C++ rule in gyre goes through these, so that warnings, include paths and test
plumbing are set in one place:

- `gyre_cc_library` makes `hdrs` reachable as `#include "gyre/<package>/<file>"`.
- `gyre_cc_test` adds the sanitizer suppression files to the runfiles;
  `gyre_cc_test_with_stress` adds a `stress`-tagged twin built with GYRE_STRESS.
- `gyre_cc_benchmark` makes a `testonly` benchmark binary tagged `benchmark`, and a
  `<name>_smoke` test that runs each benchmark once, so benchmarks cannot rot. It links
  the counting `operator new` of `//benchmarks/alloc` (allocations per operation). The
  smoke test sets GYRE_BENCH_SMOKE, which `gyre::bench::SizeArg` reads to shrink sizes.
- `gyre_cc_fuzzer` makes a libFuzzer target (`--config=fuzz`) that, in every other
  build, links a replay driver, and a `<name>_corpus_test` replaying its seed corpus.
- `gyre_cc_grpc_library` runs protoc and grpc_cpp_plugin over `.proto` files.

Warnings are enabled here; `-Werror` lives only in gyre's own `.bazelrc`, so a downstream
workspace with another compiler never fails on gyre's warnings.
"""

GYRE_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-std=c++20",
]

def gyre_cc_library(name, copts = [], **kwargs):
    native.cc_library(
        name = name,
        copts = GYRE_COPTS + copts,
        include_prefix = "gyre/" + native.package_name(),
        **kwargs
    )

def gyre_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(
        name = name,
        copts = GYRE_COPTS + copts,
        **kwargs
    )

# Test sizes: every ordinary test is "small" (timeout 60 s plain, 180 s under ASan, 300 s
# under TSan: .bazelrc). The slowest ordinary test takes under 25 s under TSan on a
# loaded 2-core machine, so each has more than 10x headroom; a test that needs more is
# split, or its heavy variant is tagged "stress" and sized "large".
def gyre_cc_test(name, copts = [], data = [], size = "small", deps = [], **kwargs):
    native.cc_test(
        name = name,
        copts = GYRE_COPTS + copts,
        data = data + ["//bazel:sanitizer_suppressions"],
        size = size,
        deps = deps,
        **kwargs
    )

def gyre_cc_test_with_stress(name, stress_args = [], **kwargs):
    """A test and its heavy twin, from the same sources.

    `name` is an ordinary test. `<name less _test>_stress_test` builds the same sources
    with GYRE_STRESS defined (the test's heavy sizes), is tagged `stress` (run by
    `./dev stress`, and once by `.ci/run`) and sized large. `stress_args` (a
    --gtest_filter, say) are passed to the stress twin only.
    """
    if not name.endswith("_test"):
        fail("gyre_cc_test_with_stress: %s does not end in _test" % name)
    gyre_cc_test(name = name, **kwargs)
    stress = dict(kwargs)
    stress["size"] = "large"
    stress["args"] = kwargs.get("args", []) + stress_args
    stress["local_defines"] = kwargs.get("local_defines", []) + ["GYRE_STRESS"]
    stress["tags"] = kwargs.get("tags", []) + ["stress"]
    gyre_cc_test(name = name[:-len("_test")] + "_stress_test", **stress)

def gyre_cc_benchmark(name, copts = [], deps = [], tags = [], **kwargs):
    native.cc_binary(
        name = name,
        copts = GYRE_COPTS + copts,
        testonly = True,
        tags = tags + ["benchmark"],
        deps = deps + [
            "@com_github_google_benchmark//:benchmark_main",
            Label("//benchmarks/alloc:alloc_counter"),
        ],
        **kwargs
    )
    native.sh_test(
        name = name + "_smoke",
        srcs = ["//bazel:benchmark_smoke.sh"],
        args = ["$(location :%s)" % name],
        data = [":" + name, "//bazel:sanitizer_suppressions"],
        size = "small",
        # The sanitizer configs skip benchmark_smoke: a benchmark proves nothing there
        # that the unit tests do not.
        tags = tags + ["benchmark_smoke"],
    )

def gyre_cc_fuzzer(name, srcs, corpus, copts = [], deps = [], **kwargs):
    """A fuzz target defining LLVMFuzzerTestOneInput, and a test replaying `corpus`.

    Under `--config=fuzz` (clang with -fsanitize=fuzzer,address) the binary is a
    libFuzzer fuzzer: `./dev fuzz //pkg:name --time=60s`. In other builds it links
    //bazel:fuzz_driver, which runs the files given on its command line; the
    `<name>_corpus_test` runs it over the seed corpus in every `bazel test`.
    """
    native.cc_binary(
        name = name,
        srcs = srcs,
        copts = GYRE_COPTS + copts,
        testonly = True,
        tags = ["fuzzer"],
        linkopts = select({
            str(Label("//bazel:fuzzing")): ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            str(Label("//bazel:fuzzing")): [],
            "//conditions:default": [Label("//bazel:fuzz_driver")],
        }),
        **kwargs
    )
    native.sh_test(
        name = name + "_corpus_test",
        srcs = [Label("//bazel:fuzz_corpus_test.sh")],
        args = ["$(location :%s)" % name] + ["$(location %s)" % c for c in corpus],
        data = [":" + name, Label("//bazel:sanitizer_suppressions")] + corpus,
        size = "small",
    )

def gyre_cc_grpc_library(name, srcs, deps = [], visibility = None, **kwargs):
    """C++ messages and gRPC stubs for `srcs` (.proto files in this package).

    Produces `<file>.pb.h` and `<file>.grpc.pb.h`, included as
    `#include "<package>/<file>.grpc.pb.h"` (the path relative to the repository root,
    as protoc writes it).
    """
    repo = native.repository_name()
    root = "." if repo == "@" else "external/" + repo[1:]
    outs = []
    for src in srcs:
        if not src.endswith(".proto"):
            fail("gyre_cc_grpc_library: %s is not a .proto file" % src)
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc", base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    pkg = native.package_name()
    protos = " ".join([root + "/" + pkg + "/" + s for s in srcs])
    out_dir = "$(GENDIR)" if root == "." else "$(GENDIR)/" + root
    native.genrule(
        name = name + "_codegen",
        srcs = srcs,
        outs = outs,
        tools = [
            "@com_github_grpc_grpc//src/compiler:grpc_cpp_plugin",
            "@com_google_protobuf//:protoc",
        ],
        cmd = ("$(location @com_google_protobuf//:protoc) " +
               "--plugin=protoc-gen-grpc=$(location @com_github_grpc_grpc//src/compiler:grpc_cpp_plugin) " +
               "-I%s --cpp_out=%s --grpc_out=%s %s") % (root, out_dir, out_dir, protos),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        visibility = visibility,
        deps = deps + [
            "@com_github_grpc_grpc//:grpc++",
            "@com_google_protobuf//:protobuf",
        ],
        **kwargs
    )
