"""The torch side without a GPU (CI runs this module): the package and its extension load, op
schemas, Meta kernels and FakeTensor tracing, opcheck of the ops that run on the CPU, CPU
preshuffle and quantize_fp8_row against Python references, the scale shapes other callers
pass, and error messages."""

import os
import re
import subprocess
import sys

import helpers
from helpers import make_single, pytest

import torch  # noqa: E402

import f8gemm  # noqa: E402

OPS = torch.ops.f8gemm
CPU = "cpu"
E4M3 = torch.float8_e4m3fn

# FBGEMM's (and MSLK's) schemas for the ops that share its names: the drop-in promise. Ours
# append `bool? pdl=None` (programmatic dependent launch for the call), and the single
# preshuffled GEMMs then `bool prefetch_w=False` (W final: loaded before the PDL wait), after all
# of FBGEMM's, so that every FBGEMM call, positional or by keyword, means the same here.
GEMM_ARGS = ("(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, Tensor? bias=None, "
             "bool use_fast_accum=True) -> Tensor")
FBGEMM_SCHEMAS = {
    "f8f8bf16_rowwise": GEMM_ARGS,
    "f8f8f16_rowwise": GEMM_ARGS,
    "f8f8bf16_rowwise_preshuffle": GEMM_ARGS,
    "f8f8f16_rowwise_preshuffle": GEMM_ARGS,
    "f8f8bf16_rowwise_out": "(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
                            "Tensor(a!) output, Tensor? bias=None, bool use_fast_accum=True) -> ()",
    "f8f8bf16_rowwise_batched": "(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
                                "Tensor? bias=None, bool use_fast_accum=True, "
                                "Tensor(a!)? output=None) -> Tensor",
    "quantize_fp8_row": "(Tensor a, Tensor? scale_ub=None, bool use_triton=True, "
                        "Tensor(a!)? output=None) -> (Tensor, Tensor)",
}


PDL_ARG = ", bool? pdl=None"
PREFETCH_W_ARG = ", bool prefetch_w=False"

# The ops that take `pdl` (last, or just before prefetch_w); the grouped ones keep FBGEMM's
# schemas and follow F8GEMM_PDL.
PDL_OPS = ("f8f8bf16_rowwise", "f8f8bf16_rowwise_out", "f8f8f16_rowwise",
           "f8f8bf16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffled_out",
           "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle",
           "f8f8f16_rowwise_preshuffle", "f8f8bf16_rowwise_batched",
           "f8f8bf16_rowwise_batched_preshuffled", "_rowwise_batched", "_rowwise_batched_out",
           "quantize_fp8_row", "silu_mul_quantize_fp8_row", "f8f8bf16_rowwise_silu_mul",
           "f8f8bf16_rowwise_preshuffled_silu_mul")
GROUPED_OPS = ("f8f8bf16_rowwise_grouped_stacked", "f8f8bf16_rowwise_grouped_stacked_preshuffled",
               "f8f8bf16_rowwise_grouped_stacked_out",
               "f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
               "f8f8bf16_rowwise_grouped_dynamic", "f8f8bf16_rowwise_grouped_dynamic_preshuffled")
# The ops that end with `prefetch_w` (GemmOptions::prefetch_w), after pdl: the single
# preshuffled GEMMs, whose weight is typically quantised and preshuffled once.
PREFETCH_W_OPS = ("f8f8bf16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffled_out",
                  "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle",
                  "f8f8f16_rowwise_preshuffle", "f8f8bf16_rowwise_preshuffled_silu_mul")
GEMM_OPS = tuple(n for n in PDL_OPS if "quantize" not in n) + GROUPED_OPS


def _schema_text(name):
    schema = str(getattr(OPS, name).default._schema)
    return schema[schema.index("("):]


# ---------------------------------------------------------------------------------- package

def test_installed_package_is_the_one_under_test():
    if not helpers.INSTALLED:
        pytest.skip("F8GEMM_TEST_INSTALLED is not set: testing the checkout")
    here = os.path.realpath(os.path.dirname(f8gemm.__file__))
    assert not here.startswith(os.path.realpath(helpers.PYDIR)), here
    assert f8gemm.build_info is not None
    assert os.path.dirname(f8gemm.library_path) == os.path.dirname(f8gemm.__file__)
    # torch.__version__ whole, local part included: CMake's Torch_VERSION drops what a
    # nightly, source-built or NGC torch carries after major.minor.patch.
    assert f8gemm.build_info["torch"] == torch.__version__


def test_nvrtc_and_its_builtins_are_found_in_the_pip_wheels_folder_beside_the_package():
    """An environment made by pip alone has libnvrtc.so.13 in site-packages/nvidia/cu13/lib
    (the nvidia-cuda-nvrtc wheel, a dependency of torch's CUDA 13 builds), not on the loader's
    path: the installed extension's RPATH must name that folder, before the toolkit's, and a
    compile must use the builtins library beside it. A copy of the installed package in a
    scratch site-packages, with copies of the loaded libnvrtc and its builtins in
    nvidia/cu13/lib beside it, must load and compile with those copies."""
    if not helpers.INSTALLED:
        pytest.skip("F8GEMM_TEST_INSTALLED is not set: the RPATH is the installed package's")
    import shutil
    import tempfile
    nvrtc = [line.split()[-1] for line in open("/proc/self/maps") if "libnvrtc.so" in line]
    assert nvrtc, "importing f8gemm mapped no libnvrtc"
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.dirname(f8gemm.__file__), os.path.join(tmp, "f8gemm"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        wheel_lib = os.path.join(tmp, "nvidia", "cu13", "lib")
        os.makedirs(wheel_lib)
        shutil.copy(nvrtc[0], os.path.join(wheel_lib, "libnvrtc.so.13"))
        # NVRTC opens its builtins library by name at its first compile; the wheel's
        # libnvrtc has no RUNPATH, so only the library's load of the copy beside libnvrtc
        # (jit/nvrtc_builtins.hpp) makes that compile use it rather than the toolkit's.
        version = re.search(r"NVRTC (\d+\.\d+)", f8gemm.info()).group(1)  # as NVRTC says
        builtins = os.path.join(os.path.dirname(nvrtc[0]), f"libnvrtc-builtins.so.{version}")
        shutil.copy(builtins, wheel_lib)
        code = ("import torch, sys\n"
                "before = [l for l in open('/proc/self/maps') if 'libnvrtc' in l]\n"
                "if before: print(before[0].split()[-1]); sys.exit(3)\n"
                "import f8gemm\n"
                "f8gemm.precompile((16, 256, 256))\n"
                "print(sorted({l.split()[-1] for l in open('/proc/self/maps') "
                "if 'libnvrtc' in l}))\n")
        env = {k: v for k, v in os.environ.items() if k != "F8GEMM_TORCH_LIB"}
        # Folders on LD_LIBRARY_PATH are searched before the RPATH: drop those that hold a
        # libnvrtc, keep the rest (torch's CUDA libraries may be found only through them).
        env["LD_LIBRARY_PATH"] = ":".join(
            d for d in env.get("LD_LIBRARY_PATH", "").split(":")
            if d and not any(f.startswith("libnvrtc") for f in
                             (os.listdir(d) if os.path.isdir(d) else ())))
        env["PYTHONPATH"] = tmp
        env["F8GEMM_CACHE_DIR"] = os.path.join(tmp, "cache")  # a compile, not a disk hit
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, cwd=tmp, timeout=120)
        if r.returncode == 3:  # the extension then reuses that one: no RPATH is consulted
            pytest.skip(f"importing torch alone mapped {r.stdout.strip()}")
        assert r.returncode == 0, r.stdout + r.stderr
        lib = os.path.realpath(wheel_lib)
        assert r.stdout.strip() == str([os.path.join(lib, os.path.basename(builtins)),
                                        os.path.join(lib, "libnvrtc.so.13")]), r.stdout


def test_a_library_the_loader_refuses_is_an_import_error_with_its_reason():
    """`import f8gemm` with F8GEMM_TORCH_LIB naming a file that is no ELF library: ImportError
    (what `try: import f8gemm / except ImportError` handles), quoting dlopen's reason."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        _expect_import_error_for_junk_library(tmp)


def _expect_import_error_for_junk_library(tmp_path):
    junk = os.path.join(tmp_path, "libf8gemm_torch.so")
    with open(junk, "wb") as f:
        f.write(b"not an ELF file")
    env = dict(os.environ, F8GEMM_TORCH_LIB=junk)
    code = ("import sys\ntry:\n    import f8gemm\nexcept ImportError as e:\n"
            "    print(e)\n    sys.exit(0)\nsys.exit(1)\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"f8gemm: cannot load {junk}" in r.stdout, r.stdout
    assert "invalid ELF header" in r.stdout or "file too short" in r.stdout, r.stdout


def test_the_library_is_the_named_file_or_folder_else_the_newest_build():
    """F8GEMM_TORCH_LIB names the .so or the folder holding it; unset, with no .so beside the
    package, a checkout's newest libf8gemm_torch.so in build*/ or one folder below is loaded
    (found in a scratch checkout: f8gemm._find_library reads _REPO and _HERE)."""
    import tempfile
    saved = f8gemm._REPO, f8gemm._HERE, os.environ.pop("F8GEMM_TORCH_LIB", None)
    try:
        with tempfile.TemporaryDirectory() as repo:
            f8gemm._REPO, f8gemm._HERE = repo, os.path.join(repo, "python", "f8gemm")
            libs = {}
            for folder, mtime in (("build-old", 1000), ("build/release", 3000), ("build-b", 2000)):
                os.makedirs(os.path.join(repo, folder))
                libs[folder] = os.path.join(repo, folder, "libf8gemm_torch.so")
                open(libs[folder], "wb").close()
                os.utime(libs[folder], (mtime, mtime))
            assert f8gemm._find_library() == libs["build/release"]
            os.environ["F8GEMM_TORCH_LIB"] = os.path.join(repo, "build-old")
            assert f8gemm._find_library() == libs["build-old"]
            os.environ["F8GEMM_TORCH_LIB"] = libs["build-b"]
            assert f8gemm._find_library() == libs["build-b"]
            os.environ["F8GEMM_TORCH_LIB"] = os.path.join(repo, "nowhere")
            with pytest.raises(ImportError, match="does not name libf8gemm_torch.so or a folder"):
                f8gemm._find_library()
    finally:
        f8gemm._REPO, f8gemm._HERE = saved[:2]
        os.environ.pop("F8GEMM_TORCH_LIB", None)
        if saved[2] is not None:
            os.environ["F8GEMM_TORCH_LIB"] = saved[2]


def test_the_import_check_compares_torch_versions_whole():
    check = f8gemm._torch_mismatch
    for version in ("2.11.0+cu130", "2.12.0.dev20260101+cu130", "2.8.0a0+5228986c39.nv25.05"):
        assert check(version, version) is None  # nightly and NGC builds load under themselves
    assert check("2.11.0", "2.11.0+cu130") is None  # a package that recorded 2.11.0 only
    assert "built against torch 2.11.0+cu130, but torch 2.12.0+cu130" in \
        check("2.11.0+cu130", "2.12.0+cu130")
    assert check("2.12.0.dev20260101", "2.12.0.dev20260102") is not None
    assert check("", "2.11.0") is None  # a checkout's build records none


def test_info_is_the_cli_text():
    text = f8gemm.info()
    lines = text.splitlines()
    assert lines[0].startswith("f8gemm "), text
    assert lines[1].startswith("NVRTC "), text
    assert lines[2].startswith("NVRTC library (in the JIT cache key): NVRTC "), text
    assert lines[3].startswith("cache: "), text
    assert lines[4].startswith("GPU"), text
    env = dict(os.environ)
    if not helpers.INSTALLED:
        env["PYTHONPATH"] = helpers.PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "f8gemm", "info"], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out == text
    cli = [os.path.join(helpers.REPO, d, "f8gemm") for d in sorted(os.listdir(helpers.REPO))
           if d.startswith("build")]
    cli = [c for c in cli if os.path.isfile(c) and os.access(c, os.X_OK)]
    if cli:
        out = subprocess.run([cli[0], "info"], check=True, capture_output=True, text=True).stdout
        if out.splitlines()[0] == lines[0]:  # same library version
            assert out == text


def test_the_module_cli_answers_help_on_stdout_and_refuses_the_rest():
    """`python -m f8gemm --help` is a question (usage on stdout, exit 0); anything it does not
    know is an error (usage on stderr, exit 2)."""
    env = dict(os.environ)
    if not helpers.INSTALLED:
        env["PYTHONPATH"] = helpers.PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    for args in (["--help"], ["-h"], ["help"]):
        r = subprocess.run([sys.executable, "-m", "f8gemm", *args], env=env, capture_output=True,
                           text=True)
        assert (r.returncode, r.stderr) == (0, ""), (args, r)
        assert r.stdout.startswith("usage: python -m f8gemm {info|version}"), r.stdout
    for args in ([], ["infos"], ["info", "extra"]):
        r = subprocess.run([sys.executable, "-m", "f8gemm", *args], env=env, capture_output=True,
                           text=True)
        assert (r.returncode, r.stdout) == (2, ""), (args, r)
        assert r.stderr.startswith("usage: python -m f8gemm {info|version}"), r.stderr
        # One line that says what was wrong (session 46's probe: the usage alone said nothing).
        assert r.stderr.count("\n") == 1, r.stderr
        why = {0: "(no command)", 1: "(unknown command 'infos')",
               2: "(one command, got 2 arguments)"}[len(args)]
        assert r.stderr.rstrip("\n").endswith(why), r.stderr
    r = subprocess.run([sys.executable, "-m", "f8gemm", "x" * 500], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and len(r.stderr) < 300, r.stderr
    assert "(and 382 more characters)" in r.stderr, r.stderr  # of its repr, quotes included


def test_the_module_cli_reports_a_library_it_cannot_load_on_one_line():
    """`python -m f8gemm info` imports the package first: a library that cannot be found or
    loaded is one line, "f8gemm: <reason>", on stderr and exit status 2 (as the CLI reports an
    error), not the import's traceback. `import f8gemm` still raises ImportError."""
    import tempfile
    env = dict(os.environ)
    if not helpers.INSTALLED:
        env["PYTHONPATH"] = helpers.PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        junk = os.path.join(tmp, "junk", "libf8gemm_torch.so")
        os.makedirs(os.path.dirname(junk))
        with open(junk, "wb") as f:
            f.write(b"not an ELF file")
        for lib, reason in ((tmp, f"f8gemm: F8GEMM_TORCH_LIB={tmp!r} does not name "
                                  "libf8gemm_torch.so or a folder holding it"),
                            (junk, f"f8gemm: cannot load {junk}: ")):
            for args in (["-m", "f8gemm", "info"], ["-mf8gemm", "version"]):
                r = subprocess.run([sys.executable, *args], env=dict(env, F8GEMM_TORCH_LIB=lib),
                                   capture_output=True, text=True, cwd=tmp, timeout=120)
                assert (r.returncode, r.stdout) == (2, ""), (args, r)
                assert r.stderr.startswith(reason) and r.stderr.count("\n") == 1, (args, r)
            r = subprocess.run([sys.executable, "-c", "import f8gemm"], capture_output=True,
                               env=dict(env, F8GEMM_TORCH_LIB=lib), text=True, cwd=tmp,
                               timeout=120)
            assert r.returncode == 1 and "Traceback" in r.stderr, r
            assert f"ImportError: {reason}" in r.stderr, r.stderr


def test_layout_version():
    assert f8gemm.PRESHUFFLE_LAYOUT_VERSION == OPS.preshuffle_layout_version() >= 1


# ---------------------------------------------------------------------------------- schemas

@pytest.mark.parametrize("name", sorted(FBGEMM_SCHEMAS))
def test_schema_matches_fbgemm(name):
    args, returns = FBGEMM_SCHEMAS[name].split(") -> ")
    ours = PDL_ARG + (PREFETCH_W_ARG if name in PREFETCH_W_OPS else "")
    assert _schema_text(name) == f"{args}{ours}) -> {returns}"


@pytest.mark.parametrize("name", PDL_OPS)
def test_pdl_is_the_last_argument(name):
    """pdl comes last, or last but prefetch_w for the single preshuffled GEMMs."""
    arguments = getattr(OPS, name).default._schema.arguments
    last = arguments[-2] if name in PREFETCH_W_OPS else arguments[-1]
    assert last.name == "pdl" and str(last.type) == "Optional[bool]", str(last)
    assert last.default_value is None and last.has_default_value() and not last.kwarg_only


@pytest.mark.parametrize("name", PREFETCH_W_OPS)
def test_prefetch_w_ends_the_single_preshuffled_gemms(name):
    schema = getattr(OPS, name).default._schema
    assert str(schema).split(") -> ")[0].endswith(PDL_ARG + PREFETCH_W_ARG), str(schema)
    last = schema.arguments[-1]
    assert last.name == "prefetch_w" and str(last.type) == "bool", str(last)
    assert last.has_default_value() and last.default_value is False and not last.kwarg_only


@pytest.mark.parametrize("name", sorted(set(GEMM_OPS) - set(PREFETCH_W_OPS)))
def test_other_gemm_ops_take_no_prefetch_w(name):
    schema = getattr(OPS, name).default._schema
    assert "prefetch_w" not in [a.name for a in schema.arguments], str(schema)


@pytest.mark.parametrize("name", GROUPED_OPS)
def test_grouped_ops_take_no_pdl(name):
    assert "pdl" not in [a.name for a in getattr(OPS, name).default._schema.arguments]


def test_aliases_share_our_preshuffled_schemas():
    assert _schema_text("f8f8bf16_rowwise_preshuffle") == \
        _schema_text("f8f8bf16_rowwise_preshuffled")
    assert _schema_text("f8f8f16_rowwise_preshuffle") == \
        _schema_text("f8f8f16_rowwise_preshuffled")
    assert f8gemm.f8f8bf16_rowwise_preshuffle is OPS.f8f8bf16_rowwise_preshuffle


# ------------------------------------------------------------------------- Meta and fakes

def _meta(*shape, dtype=E4M3):
    return torch.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("name,out_dtype", [
    ("f8f8bf16_rowwise", torch.bfloat16), ("f8f8f16_rowwise", torch.float16),
    ("f8f8bf16_rowwise_preshuffled", torch.bfloat16), ("f8f8f16_rowwise_preshuffled", torch.float16),
    ("f8f8bf16_rowwise_preshuffle", torch.bfloat16), ("f8f8f16_rowwise_preshuffle", torch.float16)])
def test_meta_single(name, out_dtype):
    plain = "preshuffle" not in name
    wq = _meta(256, 384) if plain else _meta(3, 32, 1024)
    xq = _meta(2, 5, 384)
    y = getattr(OPS, name)(xq, wq, _meta(2, 5, dtype=torch.float32),
                           _meta(256, dtype=torch.float32))
    assert y.shape == (2, 5, 256) and y.dtype == out_dtype and y.device.type == "meta"


@pytest.mark.parametrize("preshuffled", [False, True])
def test_meta_batched(preshuffled):
    wq = _meta(4, 2, 16, 1024) if preshuffled else _meta(4, 128, 256)
    op = OPS.f8f8bf16_rowwise_batched_preshuffled if preshuffled else OPS.f8f8bf16_rowwise_batched
    y = op(_meta(4, 7, 256), wq, _meta(4, 7, dtype=torch.float32),
           _meta(4, 128, dtype=torch.float32))
    assert y.shape == (4, 7, 128) and y.dtype == torch.bfloat16


def test_meta_kernels_take_prefetch_w():
    """prefetch_w changes no shape: the Meta kernels take it, by keyword or by position."""
    xq, wp = _meta(2, 5, 384), _meta(3, 32, 1024)
    xs, ws = _meta(2, 5, dtype=torch.float32), _meta(256, dtype=torch.float32)
    for name, out_dtype in (("f8f8bf16_rowwise_preshuffled", torch.bfloat16),
                            ("f8f8f16_rowwise_preshuffled", torch.float16),
                            ("f8f8bf16_rowwise_preshuffle", torch.bfloat16),
                            ("f8f8f16_rowwise_preshuffle", torch.float16)):
        op = getattr(OPS, name)
        ys = [op(xq, wp, xs, ws, prefetch_w=True),
              op(xq, wp, xs, ws, pdl=True, prefetch_w=True),
              op(xq, wp, xs, ws, None, True, True, True),
              op(xq, wp, xs, ws, None, False, None, False)]
        for y in ys:
            assert y.shape == (2, 5, 256) and y.dtype == out_dtype, (name, y.shape, y.dtype)
            assert y.device.type == "meta"
    out = _meta(2, 5, 256, dtype=torch.bfloat16)
    OPS.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, out, prefetch_w=True)
    OPS.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, out, None, True, True, True)


def test_cpu_gemms_take_prefetch_w():
    """The CPU kernels take prefetch_w and reach the library, which rejects CPU tensors."""
    xq, wq, xs, ws, _ = _cpu_single()
    wp = OPS.preshuffle(wq)
    out = torch.empty(16, 64, dtype=torch.bfloat16)
    calls = [lambda: OPS.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, prefetch_w=True),
             lambda: OPS.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, None, True, True, True),
             lambda: OPS.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, out, prefetch_w=True),
             lambda: OPS.f8f8f16_rowwise_preshuffled(xq, wp, xs, ws, pdl=False, prefetch_w=True),
             lambda: OPS.f8f8bf16_rowwise_preshuffle(xq, wp, xs, ws, prefetch_w=True),
             lambda: OPS.f8f8f16_rowwise_preshuffle(xq, wp, xs, ws, None, True, None, True)]
    for call in calls:
        with pytest.raises(ValueError, match="XQ must be in GPU memory"):
            call()
    with pytest.raises((RuntimeError, TypeError), match="prefetch_w"):
        OPS.f8f8bf16_rowwise(xq, wq, xs, ws, prefetch_w=True)


def test_meta_preshuffle_unshuffle_quantize():
    assert OPS.preshuffle(_meta(264, 208)).shape == (2, 33, 1024)
    assert OPS.preshuffle(_meta(3, 16, 128)).shape == (3, 1, 2, 1024)
    assert OPS.unshuffle(_meta(2, 33, 1024), 208).shape == (264, 208)
    q, s = OPS.quantize_fp8_row(_meta(3, 4, 64, dtype=torch.bfloat16))
    assert q.shape == (3, 4, 64) and q.dtype == E4M3 and s.shape == (3, 4)
    assert s.dtype == torch.float32


@pytest.mark.parametrize("device", [CPU, "cuda"])
def test_fake_tensor_trace_of_fp8linear(device):
    """FakeTensor (torch.compile's and torch.export's tracer) runs every op of FP8Linear's
    forward through its Meta kernel: no GPU, no compile. Fakes of any device (CUDA ones too, with
    a CPU scalar scale_ub) report the meta device there, so the Meta kernels' check passes."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = torch.empty(3, 7, 256, dtype=torch.bfloat16, device=device)
        xq, xs = OPS.quantize_fp8_row(x, torch.tensor(2.0))
        wp = OPS.preshuffle(torch.empty(64, 256, dtype=E4M3, device=device))
        y = OPS.f8f8bf16_rowwise_preshuffled(xq, wp, xs, torch.empty(64, device=device), None,
                                             True, True, True)
        assert y.shape == (3, 7, 64) and y.dtype == torch.bfloat16 and y.device.type == device


@pytest.mark.parametrize("name,args", [
    ("preshuffle", lambda: (torch.randint(-100, 100, (24, 160)).to(E4M3),)),
    ("preshuffle", lambda: (torch.randint(-100, 100, (2, 16, 272)).to(E4M3),)),
    ("unshuffle", lambda: (OPS.preshuffle(torch.randint(-100, 100, (24, 160)).to(E4M3)), 160)),
    ("quantize_fp8_row", lambda: (torch.randn(5, 3, 64, dtype=torch.bfloat16),)),
    ("quantize_fp8_row", lambda: (torch.randn(7, 32), torch.tensor(2.0))),
    # the trailing pdl (programmatic dependent launch; nothing is launched on the CPU)
    ("quantize_fp8_row", lambda: (torch.randn(5, 64, dtype=torch.bfloat16), None, True, None,
                                  True)),
    ("quantize_fp8_row", lambda: (torch.randn(5, 64), torch.tensor(2.0), True, None, False)),
    ("quantize_fp8_row", lambda: (torch.randn(5, 64), None, True, None, None)),
])
def test_opcheck_cpu(name, args):
    """torch.library.opcheck runs these ops for real on the CPU and through their fakes."""
    with helpers.fp8_comparable():
        torch.library.opcheck(getattr(OPS, name).default, args())


# ------------------------------------------------------------- CPU kernels vs references

def _preshuffle_reference(w):
    """README "Preshuffled weight layout": byte r*128 + ((c/16) ^ r)*16 + c%16 of slab (kb, nb)
    holds W[nb*8 + r, kb*128 + c], zero past K."""
    n, k = w.shape
    kb_count = (k + 127) // 128
    padded = torch.zeros(n, kb_count * 128, dtype=torch.uint8)
    padded[:, :k] = w.view(torch.uint8)
    out = torch.zeros(kb_count, n // 8, 8, 128, dtype=torch.uint8)
    c = torch.arange(128)
    for r in range(8):
        dst = ((c // 16) ^ r) * 16 + c % 16
        rows = padded[r::8].view(n // 8, kb_count, 128).permute(1, 0, 2)  # [kb, nb, 128]
        out[:, :, r, dst] = rows
    return out.view(kb_count, n // 8, 1024)


@pytest.mark.parametrize("n,k", [(8, 16), (24, 160), (64, 256), (40, 400)])
def test_preshuffle_cpu_matches_reference(n, k):
    w = torch.randint(0, 256, (n, k), dtype=torch.uint8, generator=helpers.gen(n + k)).view(E4M3)
    shuffled = OPS.preshuffle(w)
    assert torch.equal(shuffled.view(torch.uint8), _preshuffle_reference(w))
    assert torch.equal(OPS.unshuffle(shuffled, k).view(torch.uint8), w.view(torch.uint8))


def _quantize_reference(a, scale_ub=None, eps=1e-12):
    """README "quantize_rows": fp32 amax (clamped to scale_ub), inv = 448 / max(amax, eps),
    q = e4m3 RNE saturated (x * inv), scale = max(amax, eps) / 448."""
    x = a.float()
    amax = x.abs().amax(-1)
    if scale_ub is not None:
        amax = amax.clamp(max=scale_ub)
    d = amax.clamp(min=eps)
    q = (x * (448.0 / d).unsqueeze(-1)).clamp(-448.0, 448.0).to(E4M3)
    return q, d / 448.0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_quantize_cpu_matches_reference(dtype):
    g = helpers.gen(7)
    a = (torch.randn(6, 5, 96, generator=g) *
         torch.exp2(torch.randint(-6, 7, (6, 5, 1), generator=g))).to(dtype)
    a[0, 0] = 0  # an all-zero row: scale eps / 448, q all zero
    q, s = OPS.quantize_fp8_row(a)
    rq, rs = _quantize_reference(a)
    assert torch.equal(s, rs)
    assert torch.equal(q.view(torch.uint8), rq.view(torch.uint8))


def test_quantize_cpu_scale_ub_matches_reference():
    a = torch.randn(9, 64, generator=helpers.gen(3)) * 10
    q, s = OPS.quantize_fp8_row(a, torch.tensor(5.0))
    rq, rs = _quantize_reference(a, scale_ub=5.0)
    assert torch.equal(s, rs)
    assert torch.equal(q.view(torch.uint8), rq.view(torch.uint8))


# ------------------------------------------------------------- scale shapes other callers use

def _cpu_single(m=16, n=64, k=128):
    return make_single(m, n, k, device=CPU)


@pytest.mark.parametrize("xs_form,ws_form", [
    ("flat", "flat"), ("keepdim", "flat"), ("flat", "column"), ("flat", "row"),
    ("keepdim", "column"), ("keepdim", "row")])
def test_scale_shapes_are_accepted(xs_form, ws_form):
    """Every accepted scale shape passes validation: on the CPU the first error is then the
    device ("XQ must be in GPU memory"), which comes after every shape check."""
    xq, wq, xs, ws, _ = _cpu_single()
    xs = {"flat": xs, "keepdim": xs.unsqueeze(-1)}[xs_form]
    ws = {"flat": ws, "column": ws.unsqueeze(-1), "row": ws.unsqueeze(0)}[ws_form]
    for op, w in ((OPS.f8f8bf16_rowwise, wq), (OPS.f8f8bf16_rowwise_preshuffled,
                                                OPS.preshuffle(wq))):
        with pytest.raises(ValueError, match="XQ must be in GPU memory"):
            op(xq, w, xs, ws)


@pytest.mark.parametrize("xs_form,ws_form", [
    ("flat", "flat"), ("keepdim", "column"), ("keepdim", "row"), ("flat", "row")])
def test_batched_scale_shapes_are_accepted(xs_form, ws_form):
    xq, wq, xs, ws, _ = helpers.make_batched(2, 16, 64, 128, device=CPU)
    xs = {"flat": xs, "keepdim": xs.unsqueeze(-1)}[xs_form]
    ws = {"flat": ws, "column": ws.unsqueeze(-1), "row": ws.unsqueeze(1)}[ws_form]
    with pytest.raises(ValueError, match="XQ must be in GPU memory"):
        OPS.f8f8bf16_rowwise_batched(xq, wq, xs, ws)


def test_leading_shape_keepdim_x_scale_is_accepted():
    xq, wq, xs, ws, _ = make_single(6, 64, 128, lead=(2, 3), device=CPU)
    assert xs.shape == (2, 3)
    for x_scale in (xs, xs.reshape(6), xs.reshape(6, 1), xs.unsqueeze(-1)):
        with pytest.raises(ValueError, match="XQ must be in GPU memory"):
            OPS.f8f8bf16_rowwise(xq, wq, x_scale, ws)


@pytest.mark.parametrize("which,bad", [("x", (16, 2)), ("x", (1, 16)), ("w", (64, 2)),
                                       ("w", (2, 32)), ("w", (65, 1))])
def test_wrong_scale_shapes_name_the_accepted_forms(which, bad):
    xq, wq, xs, ws, _ = _cpu_single()
    scale = torch.ones(bad)
    args = (xq, wq, scale, ws) if which == "x" else (xq, wq, xs, scale)
    with pytest.raises(ValueError, match=rf"{which}_scale .*w_scale \[N\], \[N, 1\] or \[1, N\]"):
        OPS.f8f8bf16_rowwise(*args)


def test_wrong_batched_scale_shape_names_the_accepted_forms():
    xq, wq, xs, ws, _ = helpers.make_batched(2, 16, 64, 128, device=CPU)
    with pytest.raises(ValueError, match=r"w_scale \[B, N\], \[B, N, 1\] or \[B, 1, N\]"):
        OPS.f8f8bf16_rowwise_batched(xq, wq, xs, ws.unsqueeze(0))


# ------------------------------------------------------------------------- error messages

def test_cpu_error_messages():
    xq, wq, xs, ws, _ = _cpu_single()
    with pytest.raises(ValueError, match="XQ must be in GPU memory"):
        OPS.f8f8bf16_rowwise(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"WQ looks like a plain weight"):
        OPS.f8f8bf16_rowwise_preshuffled(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"WQ looks like a plain weight"):
        OPS.f8f8bf16_rowwise_preshuffle(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"x_scale must have dtype"):
        OPS.f8f8bf16_rowwise(xq, wq, xs.half(), ws)
    with pytest.raises(ValueError, match=r"K \(XQ's last dimension\) must be a positive multiple"):
        OPS.f8f8bf16_rowwise(xq[:, :40], wq[:, :40], xs, ws)
    with pytest.raises(ValueError, match=r"preshuffle: invalid argument: WQ must be \[N, K\]"):
        OPS.preshuffle(torch.zeros(128, dtype=E4M3))
    with pytest.raises(ValueError, match=r"unshuffle: invalid argument: K must be a positive"):
        OPS.unshuffle(OPS.preshuffle(wq), 40)
    with pytest.raises(ValueError, match=r"quantize_fp8_row: invalid argument: a must have"):
        OPS.quantize_fp8_row(torch.tensor(1.0))
    with pytest.raises(ValueError, match=r"scale_ub must be a 1-element torch.float32"):
        OPS.quantize_fp8_row(torch.ones(2, 16), torch.ones(2))
    # A CPU scale_ub is read on the host and must bound something, on a CPU input as on a CUDA
    # one (0, a negative, NaN and inf passed as "no bound" on the CPU input's path for a while).
    for ub in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"scale_ub must be positive and finite"):
            OPS.quantize_fp8_row(torch.ones(2, 16), torch.tensor(ub))
        with pytest.raises(ValueError, match=r"scale_ub must be positive and finite"):
            OPS.silu_mul_quantize_fp8_row(torch.ones(2, 32), torch.tensor(ub))


# ------------------------------------------- meta kernels, autograd, K == 0 (CPU-checkable)

def test_meta_kernels_refuse_real_tensors():
    """A meta tensor among real ones sends the call to the Meta kernel (Meta outranks CPU and
    CUDA): it raises instead of returning an uninitialised tensor on the real one's device."""
    xq, wq, xs, ws, _ = _cpu_single()
    f32 = torch.float32
    mx, mw, mxs, mws = _meta(16, 128), _meta(64, 128), _meta(16, dtype=f32), _meta(64, dtype=f32)
    calls = [
        (lambda: OPS.f8f8bf16_rowwise_preshuffled(xq, _meta(1, 8, 1024), xs, ws),
         "WQ is on meta but XQ is on cpu"),
        (lambda: OPS.f8f8bf16_rowwise(mx, mw, mxs, mws, torch.zeros(64)),
         "XQ is on meta but bias is on cpu"),
        (lambda: OPS.f8f8bf16_rowwise_out(mx, mw, mxs, mws, torch.empty(16, 64).bfloat16()),
         "XQ is on meta but output is on cpu"),
        (lambda: OPS.quantize_fp8_row(torch.ones(4, 64), _meta(1, dtype=f32)),
         "scale_ub is on meta but a is on cpu"),
        (lambda: OPS.silu_mul_quantize_fp8_row(torch.ones(4, 64), _meta(1, dtype=f32)),
         "scale_ub is on meta but gate_up is on cpu"),
        (lambda: OPS.f8f8bf16_rowwise_grouped_dynamic(
            _meta(2, 8, 128), _meta(2, 64, 128), _meta(2, 8, dtype=f32), _meta(2, 64, dtype=f32),
            torch.zeros(2, dtype=torch.int32)), "XQ is on meta but zero_start_index_M is on cpu"),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()
    # A CPU scale_ub is fine beside meta data, as it is beside CUDA data.
    q, s = OPS.quantize_fp8_row(_meta(4, 64, dtype=torch.bfloat16), torch.tensor(2.0))
    assert q.device.type == "meta" and s.device.type == "meta"


@pytest.mark.parametrize("call", [
    lambda d: OPS.preshuffle(torch.zeros(20, 256, dtype=E4M3, device=d)),  # N % 8
    lambda d: OPS.preshuffle(torch.zeros(64, 200, dtype=E4M3, device=d)),  # K % 16
    lambda d: OPS.preshuffle(torch.zeros(64, 256, dtype=torch.bfloat16, device=d)),
    lambda d: OPS.unshuffle(torch.zeros(2, 8, 1024, dtype=E4M3, device=d), 200),  # K % 16
    lambda d: OPS.unshuffle(torch.zeros(2, 8, 1024, dtype=E4M3, device=d), 512),  # K blocks
    lambda d: OPS.quantize_fp8_row(torch.zeros(4, 64, dtype=torch.float64, device=d)),
    lambda d: OPS.quantize_fp8_row(torch.zeros(4, 0, device=d)),  # K == 0
    lambda d: OPS.quantize_fp8_row(torch.zeros(4, 64, device=d), None, True,
                                   torch.zeros(4, 64, dtype=torch.bfloat16, device=d)),
    lambda d: OPS.silu_mul_quantize_fp8_row(torch.zeros(4, 0, device=d)),
    # More dimensions than a view holds, and more rows than the kernels index (an expanded
    # input: no memory): refused before any output is allocated, on meta as on the CPU.
    lambda d: OPS.quantize_fp8_row(torch.zeros(1, 1, 1, 2, 64, device=d)),
    lambda d: OPS.silu_mul_quantize_fp8_row(torch.zeros(1, 1, 1, 2, 64, device=d)),
    lambda d: OPS.quantize_fp8_row(torch.zeros(1, 64, device=d).expand(2**31, 64)),
    lambda d: OPS.silu_mul_quantize_fp8_row(torch.zeros(1, 1, 64, device=d).expand(2**16, 2**15, 64)),
])
def test_meta_kernels_reject_what_the_cpu_kernels_reject(call):
    """One rule for both kernels: the same ValueError on the CPU and on meta."""
    messages = []
    for device in (CPU, "meta"):
        with pytest.raises(ValueError) as info:
            call(device)
        messages.append(str(info.value))
    assert messages[0] == messages[1], messages


@pytest.mark.parametrize("device", [CPU, "meta"])
def test_unshuffle_k_near_the_int64_limit_names_its_k_blocks(device):
    """K is any Python int: ceil(K / 128) is computed without overflowing K + 127."""
    k = 2**63 - 16  # a multiple of 16
    with pytest.raises(ValueError, match=r"WQ_shuffled must have shape \[72057594037927936, 8, "
                                         r"1024\] for K=9223372036854775792"):
        OPS.unshuffle(torch.zeros(2, 8, 1024, dtype=E4M3, device=device), k)


def test_quantize_rows_of_no_values_are_refused():
    with pytest.raises(ValueError, match=r"the row length K \(a's last dimension\) must be "
                                         r"positive, got shape \[5, 0\]"):
        OPS.quantize_fp8_row(torch.zeros(5, 0))
    q, s = OPS.quantize_fp8_row(torch.zeros(0, 64))  # no rows: an empty result
    assert q.shape == (0, 64) and s.shape == (0,)


def test_backward_through_an_op_raises():
    """No op has a derivative: backward says so instead of leaving the gradients unset."""
    a = torch.randn(4, 64, requires_grad=True)
    _, s = OPS.quantize_fp8_row(a)
    with pytest.raises(RuntimeError, match="derivative for f8gemm::quantize_fp8_row is not "
                                           "implemented"):
        s.sum().backward()
    args = (_meta(4, 128), _meta(64, 128), _meta(4, dtype=torch.float32).requires_grad_(),
            _meta(64, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="derivative for f8gemm::f8f8bf16_rowwise is not"):
        OPS.f8f8bf16_rowwise(*args).float().sum().backward()
    out = _meta(4, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"_out: x_scale requires grad.*x_scale\.detach\(\)"):
        OPS.f8f8bf16_rowwise_out(*args, out)  # no result to carry a grad_fn: refused at once
    with torch.no_grad():
        OPS.f8f8bf16_rowwise_out(*args, out)
    with helpers.fp8_comparable():  # opcheck's own check of the registration
        torch.library.opcheck(OPS.quantize_fp8_row.default, (a,),
                              test_utils=("test_schema", "test_autograd_registration",
                                          "test_faketensor"))


def test_autograd_kernel_records_only_what_needs_it():
    """The Autograd kernel goes below autograd at once unless an input requires grad in grad
    mode or carries a forward-mode gradient; those keep torch's fallback (grad_fn, refusal)."""
    import warnings

    import torch.autograd.forward_ad as fwad

    a = torch.randn(4, 64, requires_grad=True)
    _, s = OPS.quantize_fp8_row(a)
    assert s.requires_grad and s.grad_fn is not None  # backward raises (the test above)
    with torch.no_grad():
        _, s = OPS.quantize_fp8_row(a)  # requires grad, grad mode off: nothing recorded
    assert not s.requires_grad and s.grad_fn is None
    view = torch.randn(8, 64)[2:6]  # autograd metadata (a view), no grad required
    _, s = OPS.quantize_fp8_row(view)
    assert not s.requires_grad and s.grad_fn is None
    with fwad.dual_level(), warnings.catch_warnings():
        # make_dual's first call scripts torch's jvp decompositions: torch.jit's deprecation.
        warnings.simplefilter("ignore", DeprecationWarning)
        dual = fwad.make_dual(torch.randn(4, 64), torch.ones(4, 64))
        for grad_mode in (True, False):
            with torch.set_grad_enabled(grad_mode):
                with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                                                              "f8gemm::quantize_fp8_row"):
                    OPS.quantize_fp8_row(dual)
    # The fallback's path keeps its argument checks: a leaf that requires grad is not written.
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        OPS.quantize_fp8_row(a, None, True, torch.zeros(4, 64, dtype=E4M3).requires_grad_())


def test_autograd_kernel_skips_the_fallback_without_autograd_work():
    """The fast path is taken: a spy kernel at AutogradOther (where the Autograd kernel reaches
    torch's fallback) sees the calls that have work for autograd and none of the others."""
    import warnings

    seen = []

    def spy(*args):
        seen.append(args[0].requires_grad)
        with torch._C._AutoDispatchBelowAutograd():
            return OPS.quantize_fp8_row.default(*args)

    lib = torch.library.Library("f8gemm", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overriding a registered kernel warns
            lib.impl("quantize_fp8_row", spy, "AutogradOther")
        a = torch.randn(4, 64)
        OPS.quantize_fp8_row(a)
        OPS.quantize_fp8_row(torch.randn(8, 64)[2:6])  # autograd metadata (a view), no grad
        a.requires_grad_()
        with torch.no_grad():
            OPS.quantize_fp8_row(a)
        assert seen == []
        OPS.quantize_fp8_row(a)
        assert seen == [True]
    finally:
        lib._destroy()
    _, s = OPS.quantize_fp8_row(a)  # torch's fallback again
    assert s.grad_fn is not None


# The _out ops (and the batched op's output=, through _rowwise_batched_out) on valid meta
# tensors: (name, call(x_scale, output), x_scale's shape, output's shape).
F32 = torch.float32
OUT_CALLS = [
    ("f8f8bf16_rowwise_out", lambda xs, out: OPS.f8f8bf16_rowwise_out(
        _meta(4, 128), _meta(64, 128), xs, _meta(64, dtype=F32), out), (4,), (4, 64)),
    ("f8f8bf16_rowwise_preshuffled_out", lambda xs, out: OPS.f8f8bf16_rowwise_preshuffled_out(
        _meta(4, 128), _meta(1, 8, 1024), xs, _meta(64, dtype=F32), out), (4,), (4, 64)),
    ("_rowwise_batched_out", lambda xs, out: OPS.f8f8bf16_rowwise_batched(
        _meta(2, 4, 128), _meta(2, 64, 128), xs, _meta(2, 64, dtype=F32), output=out),
     (2, 4), (2, 4, 64)),
    ("f8f8bf16_rowwise_grouped_stacked_out", lambda xs, out:
     OPS.f8f8bf16_rowwise_grouped_stacked_out(_meta(8, 128), _meta(2, 64, 128), xs,
                                              _meta(2, 64, dtype=F32),
                                              _meta(2, dtype=torch.int32), out), (8,), (8, 64)),
    ("f8f8bf16_rowwise_grouped_stacked_preshuffled_out", lambda xs, out:
     OPS.f8f8bf16_rowwise_grouped_stacked_preshuffled_out(
         _meta(8, 128), _meta(2, 1, 8, 1024), xs, _meta(2, 64, dtype=F32),
         _meta(2, dtype=torch.int32), out), (8,), (8, 64)),
]


@pytest.mark.parametrize("case", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_ops_bump_the_output_version(case):
    """A write is a version: a backward that saved the output before it raises."""
    _, call, xs_shape, out_shape = case
    out = _meta(*out_shape, dtype=torch.bfloat16)
    version = out._version
    call(_meta(*xs_shape, dtype=F32), out)
    assert out._version == version + 1
    p = torch.ones(out_shape, device="meta", requires_grad=True)
    z = p * out  # saves out for p's gradient
    with torch.no_grad():
        call(_meta(*xs_shape, dtype=F32), out)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_quantize_bumps_the_version_of_its_output():
    a, o = torch.randn(4, 64), torch.empty(4, 64, dtype=E4M3)
    p = torch.ones(4, 64, requires_grad=True)
    z = p * o.view(torch.uint8)  # saves a view of o, which shares its version counter
    version = o._version
    OPS.quantize_fp8_row(a, None, True, o)  # the fast path
    assert o._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    OPS.quantize_fp8_row(a.requires_grad_(), None, True, o)  # torch's fallback
    assert o._version == version + 2


@pytest.mark.parametrize("case", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_ops_write_an_inference_tensor_outside_inference_mode(case):
    """An output made under inference_mode has no version to bump and cannot have been saved
    for a backward: written outside inference_mode it is written, as before versions were
    bumped, with no error after the write."""
    _, call, xs_shape, out_shape = case
    with torch.inference_mode():
        out = _meta(*out_shape, dtype=torch.bfloat16)
    assert out.is_inference()
    call(_meta(*xs_shape, dtype=F32), out)


def test_quantize_writes_an_inference_output_outside_inference_mode():
    with torch.inference_mode():
        o = torch.zeros(4, 64, dtype=E4M3)
    a = torch.full((4, 64), 2.0)
    OPS.quantize_fp8_row(a, None, True, o)
    assert (o.float() != 0).all()


@pytest.mark.parametrize("case", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_ops_refuse_forward_mode_gradients(case):
    """A dual input's tangent would be dropped and a dual output's left stale: refused, in
    grad mode or not, and nothing is written."""
    import warnings

    import torch.autograd.forward_ad as fwad

    _, call, xs_shape, out_shape = case
    with fwad.dual_level(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # make_dual's first jit scripting
        xs = _meta(*xs_shape, dtype=F32)
        out = _meta(*out_shape, dtype=torch.bfloat16)
        dual_xs = fwad.make_dual(xs, torch.ones_like(xs))
        dual_out = fwad.make_dual(out, torch.ones_like(out))
        for grad_mode in (True, False):
            with torch.set_grad_enabled(grad_mode):
                with pytest.raises(NotImplementedError,
                                   match=r"x_scale carries a forward-mode gradient .*"
                                         r"unpack_dual\(x_scale\)\.primal"):
                    call(dual_xs, out)
                with pytest.raises(NotImplementedError,
                                   match=r"output carries a forward-mode gradient .*"
                                         r"pass an output that carries no tangent$"):
                    call(xs, dual_out)
        assert out._version == 0


def test_every_tensor_op_has_an_autograd_kernel():
    names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("f8gemm::")]
    for name in names:
        schema = getattr(OPS, name.split("::")[1]).default._schema
        if any("Tensor" in str(arg.type) for arg in schema.arguments):
            assert any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
                       for key in ("Autograd", "CompositeImplicitAutograd")), name
    assert len(names) >= 28, names


def test_precompile_takes_pdl_and_prefetch_w():
    """Both say which plan a later call uses (a chained one with prefetch_w and PDL on)."""
    assert _schema_text("precompile").endswith(PDL_ARG + PREFETCH_W_ARG + ") -> ()")
    for shape, layout in (((16, 256, 256), "plain"), ((2, 16, 256, 256), "preshuffled")):
        with pytest.raises(ValueError, match="prefetch_w=True is an argument of the single "):
            f8gemm.precompile(shape, layout=layout, pdl=True, prefetch_w=True)


def test_precompile_takes_one_shape_of_any_integers_and_checks_its_length():
    """One shape is a sequence of integers (numpy's too), of whatever length: the op then names
    a wrong length; a size that is not an integer is refused, not truncated."""
    np = pytest.importorskip("numpy")
    # N = 100 is refused by the op's rules, before anything compiles: the shape reached it whole.
    for shape in ((np.int64(16), np.int64(100), np.int64(256)), [16, 100, 256]):
        with pytest.raises(ValueError, match=r"N must be a positive multiple of 8"):
            f8gemm.precompile(shape)
    with pytest.raises(ValueError, match=r"G,total_M,N,K = 2,16,100,256"):
        f8gemm.precompile_grouped(tuple(np.int32(v) for v in (2, 16, 100, 256)))
    with pytest.raises(ValueError, match=r"shape must be \[M, N, K\] or \[B, M, N, K\], got "
                                         r"\[16, 256\]"):
        f8gemm.precompile((16, 256))
    with pytest.raises(ValueError, match=r"shape must be \[G, total_M, N, K\].*got \[2, 16, 256\]"):
        f8gemm.precompile_grouped((2, 16, 256))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        f8gemm.precompile([(16.5, 256, 256)])
    # A shape held in an integer tensor is one shape too (it was taken for a list of shapes:
    # "iteration over a 0-d tensor"), and a list of them several.
    for shapes in (torch.tensor([16, 100, 256]), torch.tensor([[16, 100, 256]]),
                   [torch.tensor([16, 100, 256])]):
        with pytest.raises(ValueError, match=r"N must be a positive multiple of 8, got 100"):
            f8gemm.precompile(shapes)
    with pytest.raises(ValueError, match=r"G,total_M,N,K = 2,16,100,256"):
        f8gemm.precompile_grouped(torch.tensor([2, 16, 100, 256]))
    with pytest.raises(TypeError, match="only integer tensors"):
        f8gemm.precompile(torch.tensor([16.0, 256.0, 256.0]))


def test_precompile_names_what_it_expected_of_bad_shapes():
    """A float size is a TypeError naming it (not "'float' object is not iterable"), shapes
    that are no sequence a TypeError naming the accepted forms; no shapes at all is nothing to
    build (a model without FP8 layers), as before."""
    for fn, form in ((f8gemm.precompile, r"\(M, N, K\) or \(B, M, N, K\)"),
                     (f8gemm.precompile_grouped, r"\(G, total_M, N, K\) or \(G, M_max, N, K\)")):
        op = fn.__name__
        with pytest.raises(TypeError, match=rf"^f8gemm\.{op}: every size of a shape must be an "
                                            r"integer, got 16\.0 \(float\) in the shape "
                                            r"\[16\.0, 256, 256(, 256)?\]"):
            fn([16.0, 256, 256] + ([256] if op == "precompile_grouped" else []))
        for bad, shown in ((None, "NoneType None"), ("abc", "str 'abc'"), (16, "int 16"),
                           (torch.tensor(16), r"Tensor tensor\(16\)")):
            with pytest.raises(TypeError, match=rf"^f8gemm\.{op}: shapes must be one shape "
                                                rf"{form} of integers or a list of such "
                                                rf"shapes, got {shown}$"):
                fn(bad)
        with pytest.raises(TypeError, match=rf"^f8gemm\.{op}: shapes must be .* got a mix of "
                                            r"sizes and shapes: \[\[16, 256, 256\], 5\]$"):
            fn([[16, 256, 256], 5])
        for empty in ([], (), torch.tensor([], dtype=torch.int64)):
            fn(empty)
