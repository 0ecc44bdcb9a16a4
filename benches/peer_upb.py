#!/usr/bin/env python3
"""Peer decoder: Python protobuf (upb backend) over the same payload bytes.

Usage: peer_upb.py DESCRIPTOR_SET PAYLOADS [--repeat N] [--json]

DESCRIPTOR_SET is `agy-audit schema dump --out FILE`; PAYLOADS is the file
`agy-audit bench --dump-payloads FILE` writes (u32 little-endian length, then
a serialized gemini_coder.Trajectory, repeated). Prints the decode throughput
on one core. Requires `pip install protobuf`.
"""
import json
import struct
import sys
import time


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    repeat = 3
    if "--repeat" in argv:
        repeat = int(argv[argv.index("--repeat") + 1])
        args = [a for a in args if a != str(repeat)]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.internal import api_implementation

    fds = descriptor_pb2.FileDescriptorSet()
    with open(args[0], "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("gemini_coder.Trajectory"))
    payloads = []
    with open(args[1], "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        payloads.append(data[pos : pos + n])
        pos += n
    total = sum(len(p) for p in payloads)
    best = None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        for p in payloads:
            m = cls()
            m.ParseFromString(p)
        secs = time.perf_counter() - start
        best = secs if best is None else min(best, secs)
    result = {
        "backend": api_implementation.Type(),
        "conversations": len(payloads),
        "bytes": total,
        "seconds": best,
        "mbPerSec": total / 1e6 / max(best, 1e-9),
    }
    if "--json" in argv:
        print(json.dumps(result))
    else:
        print(
            f"peer {result['backend']}: {len(payloads)} trajectories, {total/1e6:.1f} MB in "
            f"{best:.3f} s = {result['mbPerSec']:.0f} MB/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
