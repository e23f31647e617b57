"""What moving one large output from a worker to kbv's parent costs, step by step (docs/performance.md).

Usage (on the GPU machine): python3 bench/probes/transfer_probe.py [MiB]   (default 512)

A worker copies each large output into a shared memfd region that the parent maps read-only and
compares in place (src/kbv/worker/shared_region.h). This times, side by side in one process, for
one float32 output of the given size: the device-to-host copy into fresh region pages, into
pages already used, into pages populated first (MADV_POPULATE_WRITE, as the worker does) and
into pages registered with CUDA (cudaHostRegister: a DMA instead of the driver's staged copy);
the registration itself; a first and a second read of the pages through a second, read-only
mapping (the parent's); torch's allclose over two such outputs on the host; a host copy made
the plain way (`.cpu()`); a float64 max |x - r| on the device. Prints a table of seconds last.
"""
import ctypes
import mmap
import os
import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore", message="The given buffer is not writable")  # the parent's view is read-only
MADV_POPULATE_WRITE = 23
libc = ctypes.CDLL(None, use_errno=True)
libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def timed(step):
    torch.cuda.synchronize()
    begun = time.perf_counter()
    result = step()
    torch.cuda.synchronize()
    return time.perf_counter() - begun, result


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    nbytes = mib << 20
    count = nbytes // 4
    fd = os.memfd_create("kbv-probe")
    os.ftruncate(fd, 8 * nbytes)
    region = mmap.mmap(fd, 8 * nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    parent = mmap.mmap(fd, 8 * nbytes, mmap.MAP_SHARED, mmap.PROT_READ)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    slot = lambda i: torch.frombuffer(region, dtype=torch.float32, count=count, offset=i * nbytes)
    output = torch.randn(count, device="cuda")
    rows = []

    rows.append(("device draw (randn)", timed(lambda: torch.randn(count, device="cuda"))[0]))
    rows.append(("copy into fresh pages", timed(lambda: slot(0).copy_(output))[0]))
    rows.append(("copy into the same pages again", timed(lambda: slot(0).copy_(output))[0]))
    rows.append(("MADV_POPULATE_WRITE, fresh pages", timed(lambda: libc.madvise(base + nbytes, nbytes, MADV_POPULATE_WRITE))[0]))
    rows.append(("copy into populated pages", timed(lambda: slot(1).copy_(output))[0]))
    cudart = torch.cuda.cudart()
    seconds, status = timed(lambda: cudart.cudaHostRegister(base + 2 * nbytes, nbytes, 0))
    rows.append((f"cudaHostRegister, fresh pages ({status})", seconds))
    rows.append(("copy into registered pages", timed(lambda: slot(2).copy_(output))[0]))
    rows.append(("copy into registered pages again", timed(lambda: slot(2).copy_(output))[0]))
    seconds, status = timed(lambda: cudart.cudaHostRegister(base + nbytes, nbytes, 0))
    rows.append((f"cudaHostRegister, populated pages ({status})", seconds))

    read = lambda i: torch.frombuffer(parent, dtype=torch.float32, count=count, offset=i * nbytes)
    rows.append(("parent: first read (sum)", timed(lambda: read(2).sum(dtype=torch.float64))[0]))
    rows.append(("parent: second read (sum)", timed(lambda: read(2).sum(dtype=torch.float64))[0]))
    rows.append(("parent: allclose, torch expressions", timed(lambda: torch.allclose(read(1), read(2)))[0]))
    rows.append(("worker: host copy of the output", timed(lambda: output.cpu())[0]))
    rows.append(("device: float64 |x - r| max", timed(lambda: (output.double() - output.double()).abs().max().item())[0]))

    print(f"{mib} MiB float32 output, torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"{torch.get_num_threads()} host threads")
    for name, seconds in rows:
        print(f"{name:44s} {seconds:8.4f} s  {nbytes / seconds / 1e9:7.1f} GB/s")


if __name__ == "__main__":
    main()
