#!/usr/bin/env python3
"""Invoke a running server with requests: JSON, CSV, .npy and Open Inference Protocol v2 JSON.

    python3 examples/invoke.py [URL]        (default http://127.0.0.1:8080; `npm start` serves it)

Needs requests (Debian: python3-requests); numpy is used for the .npy request when installed.
"""
import io
import json
import struct
import sys

import requests

URL = (sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080").rstrip("/")


def check(r):
    if not r.ok:
        sys.exit(f"{r.request.method} {r.url} -> {r.status_code}: {r.text}")
    return r


# JSON: the named-inputs shape; the answer names the outputs.
r = check(requests.post(f"{URL}/models/mlp/invoke", json={"inputs": {"input": [[1, 2, 3, 4]]}}))
print("json:", r.json())

# CSV, as the SageMaker SDK's CSVSerializer sends it: one row per line, no header.
r = check(requests.post(f"{URL}/models/mlp/invoke", data="1,2,3,4\n0,0,0,0\n",
                        headers={"Content-Type": "text/csv", "Accept": "text/csv"}))
print("csv:", r.text.strip().split("\n"))


def npy_float32(rows):
    """A .npy file (format 1.0) of a float32 matrix, written by hand so numpy is optional."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), len(rows[0]))
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    body = b"".join(struct.pack("<%df" % len(row), *row) for row in rows)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + body


# .npy, as NumpySerializer sends it; the answer is .npy too.
r = check(requests.post(f"{URL}/models/mlp/invoke", data=npy_float32([[1, 2, 3, 4]]),
                        headers={"Content-Type": "application/x-npy", "Accept": "application/x-npy"}))
try:
    import numpy
    print("npy:", numpy.load(io.BytesIO(r.content)).tolist())
except ImportError:
    print("npy:", len(r.content), "bytes of .npy (install numpy to read them)")

# Open Inference Protocol v2 JSON (KServe, Triton clients).
v2 = {"id": "1", "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
r = check(requests.post(f"{URL}/v2/models/mlp/infer", json=v2))
print("v2:", json.dumps(r.json()["outputs"][0]["data"]))
