# Hostile, otherwise honest: at import it fills its build folder (TORCH_EXTENSIONS_DIR) with links
# to a file outside the sandbox that root owns (KBV_HOSTILE_TARGET, and /etc/shadow) and a link to
# a folder, swapped for a file and back while its import runs: root, copying what the build left,
# would change or copy what they point to if it followed a path. Contained: kbv reads the folder by
# descriptor, never through a link, once no process of the sandbox is left; the target is unchanged
# and no link reaches the cache.
import os
import threading

import torch
import torch.nn as nn

folder = os.environ["TORCH_EXTENSIONS_DIR"]
target = os.environ.get("KBV_HOSTILE_TARGET", "/etc/passwd")
os.makedirs(folder, exist_ok=True)
for name, points_to in (("kbv-hostile-link", target), ("kbv-hostile-shadow", "/etc/shadow"), ("kbv-hostile-dir", "/etc")):
    try:
        os.symlink(points_to, os.path.join(folder, name))
    except OSError as error:
        print(f"hostile: {name}: {error}")


def swap():
    path = os.path.join(folder, "kbv-hostile-swap")
    for _ in range(2000):
        for make in (lambda: open(path, "w").close(), lambda: os.symlink(target, path)):
            try:
                os.remove(path)
            except OSError:
                pass
            try:
                make()
            except OSError:
                pass


threading.Thread(target=swap, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
