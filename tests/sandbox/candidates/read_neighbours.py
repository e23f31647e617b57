# Hostile, otherwise honest: at import it lists the folders of its own file, of the problem and of
# kbv's working folder, and every folder above them up to the root, and reads the files it finds
# there: other candidates' sources, other problems, a run's manifest, other runs beside this one, the
# caller's files at the root. Contained: the view holds the system's folders and, of the rest, only
# the files named to it; no other file is in those folders.
import os
import sys

import torch
import torch.nn as nn

problem = next((m.__file__ for m in list(sys.modules.values()) if hasattr(m, "get_inputs") and getattr(m, "__file__", None)), None)
own = os.path.abspath(__file__)
folders = set()
for start in {os.path.dirname(own), os.path.dirname(os.path.abspath(problem)) if problem else os.path.dirname(own), os.getcwd()}:
    while True:
        folders.add(start)
        if start == "/":
            break
        start = os.path.dirname(start)
for folder in sorted(folders):
    try:
        names = os.listdir(folder)
    except OSError as error:
        print(f"hostile: {folder}: {error}")
        continue
    for name in names:
        path = os.path.join(folder, name)
        # The scratch at /tmp is its own (private, empty at the start): kbv writes nothing of another's there.
        if path in (own, problem) or folder == "/tmp" or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                print(f"hostile: read {path} ({len(f.read())} bytes)")
        except OSError as error:
            print(f"hostile: {path}: {error}")
print(f"hostile: neighbours looked at in {len(folders)} folders")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
