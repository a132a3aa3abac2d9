"""The requirements of an installed torch (installed with --no-deps) that CI still needs, one per
line, for `.ci/run`: every pure-Python requirement, and each CUDA library wheel only when the
loader cannot already find that library (the CUDA toolkit on the machine provides most of them).
triton and cuda-bindings are left out: neither the extension build nor the CPU tests use them.
Run with the virtual environment's python."""

import importlib.metadata
import re
import subprocess

from packaging.requirements import Requirement

# The shared library each CUDA wheel provides (the name torch's libraries link against).
WHEEL_LIBRARY = {
    "nvidia-cudnn-cu13": "libcudnn.so.9",
    "nvidia-cusparselt-cu13": "libcusparseLt.so.0",
    "nvidia-nccl-cu13": "libnccl.so.2",
    "nvidia-nvshmem-cu13": "libnvshmem_host.so.3",
}
# The extras of the cuda-toolkit meta-package (one wheel each) and their libraries.
TOOLKIT_EXTRA_LIBRARY = {
    "cublas": "libcublas.so.13",
    "cudart": "libcudart.so.13",
    "cufft": "libcufft.so.12",
    "cufile": "libcufile.so.0",
    "cupti": "libcupti.so.13",
    "curand": "libcurand.so.10",
    "cusolver": "libcusolver.so.12",
    "cusparse": "libcusparse.so.12",
    "nvjitlink": "libnvJitLink.so.13",
    "nvrtc": "libnvrtc.so.13",
    "nvtx": "libnvToolsExt.so.1",
}
SKIPPED = {"triton", "cuda-bindings"}


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def main():
    ldconfig = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    found = set(re.findall(r"^\s*(\S+) \(", ldconfig, re.M))
    out = []
    for text in importlib.metadata.requires("torch") or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonical(req.name)
        if name in SKIPPED:
            continue
        if name == "cuda-toolkit":
            extras = sorted(e for e in req.extras
                            if TOOLKIT_EXTRA_LIBRARY.get(e, "?") not in found)
            if extras:
                out.append(f"{req.name}[{','.join(extras)}]{req.specifier}")
            continue
        if name in WHEEL_LIBRARY and WHEEL_LIBRARY[name] in found:
            continue
        out.append(f"{req.name}{req.specifier}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
