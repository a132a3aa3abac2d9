"""The dependency edges of a captured CUDA graph, read through the driver (cuGraphGetEdges_v2,
CUDA 12.3+), for the tests of programmatic dependent launch: a kernel launched with it while a
stream is captured hangs off the kernel before it by a programmatic edge
(CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC), any other launch by an ordinary one. The graph comes
from torch.cuda.CUDAGraph(keep_graph=True).raw_cuda_graph()."""

import ctypes

CU_GRAPH_NODE_TYPE_KERNEL = 0
CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1


class _EdgeData(ctypes.Structure):
    """CUgraphEdgeData (cuda.h): one byte each for the ports and the type, five reserved."""
    _fields_ = [("from_port", ctypes.c_ubyte), ("to_port", ctypes.c_ubyte),
                ("type", ctypes.c_ubyte), ("reserved", ctypes.c_ubyte * 5)]


_driver = None


def _cuda():
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuGraphGetEdges_v2.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(_EdgeData), ctypes.POINTER(ctypes.c_size_t)]
        lib.cuGraphNodeGetType.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        _driver = lib
    return _driver


def _check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


def edges(graph):
    """[(from_node, to_node, programmatic)] of a cudaGraph_t given as an int."""
    lib = _cuda()
    count = ctypes.c_size_t(0)
    _check(lib.cuGraphGetEdges_v2(graph, None, None, None, ctypes.byref(count)),
           "cuGraphGetEdges_v2 (count)")
    n = count.value
    src = (ctypes.c_void_p * max(n, 1))()
    dst = (ctypes.c_void_p * max(n, 1))()
    data = (_EdgeData * max(n, 1))()
    _check(lib.cuGraphGetEdges_v2(graph, src, dst, data, ctypes.byref(count)),
           "cuGraphGetEdges_v2")
    return [(src[i], dst[i], data[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC)
            for i in range(count.value)]


def _is_kernel(node):
    kind = ctypes.c_int(-1)
    _check(_cuda().cuGraphNodeGetType(node, ctypes.byref(kind)), "cuGraphNodeGetType")
    return kind.value == CU_GRAPH_NODE_TYPE_KERNEL


def programmatic_count(graph):
    """How many edges of the graph are programmatic."""
    return sum(p for _, _, p in edges(graph))


def chain_edge_types(graph):
    """For a graph that is one line of kernel nodes (a stream's kernels captured one after the
    other), whether each edge along the line is programmatic, in launch order: n kernels give
    n - 1 values, the i-th saying how kernel i + 1 was launched. Anything else (a branch, a
    node that is not a kernel) raises AssertionError."""
    found = edges(graph)
    if not found:
        return []
    after = {}
    has_before = set()
    for a, b, programmatic in found:
        assert a not in after, "the graph branches: not one stream's chain of kernels"
        after[a] = (b, programmatic)
        has_before.add(b)
    starts = [node for node in after if node not in has_before]
    assert len(starts) == 1, f"not one line of nodes: {len(found)} edges, {len(starts)} heads"
    types, node = [], starts[0]
    assert _is_kernel(node), "a node of the chain is not a kernel"
    while node in after:
        node, programmatic = after[node]
        assert _is_kernel(node), "a node of the chain is not a kernel"
        types.append(programmatic)
    assert len(types) == len(found), "the graph has more than one line"
    return types
