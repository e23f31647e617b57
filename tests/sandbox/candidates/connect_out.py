# Hostile, otherwise honest: at import it connects to the test's listeners on the host's loopback
# (TCP port KBV_HOSTILE_PORT) and on an abstract Unix socket (KBV_HOSTILE_SOCKET), and sends bytes.
# Contained: the sandbox's network has no route anywhere; neither listener gets a connection.
import os
import socket

import torch
import torch.nn as nn

for family, address in ((socket.AF_INET, ("127.0.0.1", int(os.environ.get("KBV_HOSTILE_PORT", "1")))),
                        (socket.AF_UNIX, "\0" + os.environ.get("KBV_HOSTILE_SOCKET", "kbv-hostile"))):
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(address)
            s.sendall(b"from a candidate")
        print(f"hostile: reached {address!r}")
    except OSError as error:
        print(f"hostile: {address!r}: {error}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
