# Hostile, otherwise honest: at import it lists the folders of its own file, of the problem and of
# kbv's working folder, and reads what it finds there: other candidates' sources, other problems, a
# run's manifest. Contained: those folders are empty in its view; only its own file and the
# problem's are shown in them.
import os
import sys

import torch
import torch.nn as nn

problem = next((m.__file__ for m in list(sys.modules.values()) if hasattr(m, "get_inputs") and getattr(m, "__file__", None)), None)
own = os.path.abspath(__file__)
for folder in {os.path.dirname(own), os.path.dirname(os.path.abspath(problem)) if problem else own, os.getcwd()}:
    try:
        names = os.listdir(folder)
    except OSError as error:
        print(f"hostile: {folder}: {error}")
        continue
    for name in names:
        path = os.path.join(folder, name)
        if path in (own, problem) or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                print(f"hostile: read {path} ({len(f.read())} bytes)")
        except OSError as error:
            print(f"hostile: {path}: {error}")
print("hostile: neighbours looked at")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
