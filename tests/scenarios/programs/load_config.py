"""Reads a JSON config naming the data file; a config that does not parse silently falls back
to the built-in defaults file (no error at the syscall level: the program just goes elsewhere)."""

import json
import os
import sys

base = sys.argv[1]
try:
    with open(os.path.join(base, "app.json")) as fh:
        data_file = json.load(fh)["data"]
except ValueError:
    data_file = "defaults.ini"
with open(os.path.join(base, data_file)) as fh:
    print(len(fh.read()))
