# Hostile, otherwise honest: at import it opens sockets of families no kernel build or CUDA call
# needs -- vsock first (it reaches the host of a virtual machine from every network namespace),
# packet, CAN, TIPC, RDS, Bluetooth, the kernel's crypto and key sockets, netlink beyond routing --
# and vsock again through the raw system call with high bits set in the family, which the kernel
# drops. Contained: every one fails with EPERM (the system-call filter); the log says so.
import ctypes
import errno
import socket

import torch
import torch.nn as nn

FAMILIES = {"vsock": (40, socket.SOCK_STREAM, 0), "packet": (17, socket.SOCK_RAW, 0), "can": (29, socket.SOCK_RAW, 1),
            "tipc": (30, socket.SOCK_RDM, 0), "rds": (21, socket.SOCK_SEQPACKET, 0), "bluetooth": (31, socket.SOCK_STREAM, 3),
            "alg": (38, socket.SOCK_SEQPACKET, 0), "key": (15, socket.SOCK_RAW, 2),
            "netlink uevent": (16, socket.SOCK_DGRAM, 15)}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, (family, kind, protocol) in list(FAMILIES.items()) + [("vsock, high bits", ((1 << 32) | 40, socket.SOCK_STREAM, 0))]:
    fd = libc.syscall(41, ctypes.c_long(family), kind, protocol)  # socket(2) on x86-64
    if fd >= 0:
        print(f"hostile: opened a {name} socket")
    else:
        print(f"hostile: {name}: {errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
