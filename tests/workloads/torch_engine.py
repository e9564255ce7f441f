# SPDX-License-Identifier: Apache-2.0
# PyTorch's GPU backward in shape, on the GPU double: forward() makes two autograd nodes at two
# lines (libtorch_cpu.so's double, tests/workloads/torch_double.c), backward() runs them on the
# engine's own thread (pt_autograd_0), which launches each node's kernel (the big layer's 8
# times the small one's) and has no Python frames. xsprofd must put every one of those kernels
# under its node's forward line and the backward() line. With LIBNVTX3INTEROP, each step's
# forward() and backward() are NVTX ranges of those names on the Python thread, as a user puts
# them: the kernels the engine's thread launches are backward's GPU time, none is forward's.
# Usage: python3 torch_engine.py LIBTORCH_CPU_DOUBLE LIBXS_GPU_DOUBLE STEPS [LIBNVTX3INTEROP]
import contextlib
import ctypes
import sys

torch = ctypes.CDLL(sys.argv[1])
gpu = ctypes.CDLL(sys.argv[2])
nvtx = ctypes.CDLL(sys.argv[4]) if len(sys.argv) > 4 else None
if nvtx:
    nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
torch.xs_td_node.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
torch.xs_td_node.restype = ctypes.c_void_p
torch.xs_td_backward.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]


def forward():
    big = torch.xs_td_node(b"bwd_big", 800000)  # FORWARD BIG
    small = torch.xs_td_node(b"bwd_small", 100000)  # FORWARD SMALL
    return [big, small]


@contextlib.contextmanager
def nvtx_range(name):
    if nvtx:
        nvtx.nvtxRangePushA(name)
    try:
        yield
    finally:
        if nvtx:
            nvtx.nvtxRangePop()


def step():
    with nvtx_range(b"forward"):
        nodes = forward()
    arr = (ctypes.c_void_p * len(nodes))(*nodes)
    with nvtx_range(b"backward"):
        torch.xs_td_backward(arr, len(nodes))  # BACKWARD


def main(steps):
    for _ in range(steps):
        step()
    gpu.xs_double_wait()
    return gpu.xs_double_send()


sys.exit(main(int(sys.argv[3])))
