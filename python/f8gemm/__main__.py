"""`python -m f8gemm info`: what the CLI's `f8gemm info` prints (library version, NVRTC, CUDA
runtime, driver, cache folder, GPU). `python -m f8gemm version`: the package, where its
extension was loaded from, and the torch and CUDA versions it was built against."""

import sys

USAGE = "usage: python -m f8gemm {info|version}"


def main(argv):
    if argv in (["-h"], ["--help"], ["help"]):
        print(USAGE)  # asked for: on stdout, and not an error
        return 0
    if len(argv) != 1 or argv[0] not in ("info", "version"):
        # One line, as the CLI's errors: the usage, then what was wrong with the arguments.
        if not argv:
            why = "no command"
        elif argv[0] not in ("info", "version"):
            shown = repr(argv[0])  # escapes control characters: one line whatever the input
            cut = f" (and {len(shown) - 120} more characters)" if len(shown) > 120 else ""
            why = f"unknown command {shown[:120]}{cut}"
        else:
            why = f"one command, got {len(argv)} arguments"
        print(f"{USAGE} ({why})", file=sys.stderr)
        return 2
    import torch

    import f8gemm
    if argv[0] == "info":
        sys.stdout.write(f8gemm.info())
        return 0
    built = f8gemm.build_info
    print(f"f8gemm {f8gemm.__version__ or '(checkout)'}, preshuffle layout "
          f"{f8gemm.PRESHUFFLE_LAYOUT_VERSION}")
    print(f"extension: {f8gemm.library_path}")
    print(f"torch: {torch.__version__} (built against "
          f"{built['torch'] if built else 'the torch of that build'})")
    print(f"CUDA toolkit at build time: {built['cuda'] if built else 'see the build'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
