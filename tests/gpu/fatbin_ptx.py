#!/usr/bin/env python3
"""List the device code embedded in a CUDA binary (the .nv_fatbin section of an ELF file,
read with objcopy) without cuobjdump, and check that PTX is there.

    fatbin_ptx.py FILE     one line per fatbin (one per .cu object): its cubins and PTX;
                           exit 0 when every fatbin holds PTX for the highest architecture
                           it has a cubin for, 1 otherwise

Fatbin layout (CUDA's fatbinary_section.h): a header {u32 magic 0xBA55ED50, u16 version,
u16 header size, u64 payload size}, then entries {u16 kind (1 PTX, 2 ELF cubin), u16 version,
u32 header size, u32 padded payload size, ..., u32 sm at byte 28}, each followed by its
payload. Fatbins of several objects follow each other, 8-byte aligned.
"""
import os
import struct
import subprocess
import sys
import tempfile

MAGIC = 0xBA55ED50


def fatbins(blob):
    off = 0
    while off + 16 <= len(blob):
        magic, _ver, hs, size = struct.unpack_from("<IHHQ", blob, off)
        if magic != MAGIC:
            off += 8  # padding between objects' fatbins
            continue
        entries, e, end = [], off + hs, off + hs + size
        while e + 32 <= end:
            kind, _v, ehs, padded = struct.unpack_from("<HHII", blob, e)
            (sm,) = struct.unpack_from("<I", blob, e + 28)
            if ehs == 0:
                break
            entries.append((kind, sm))
            e += ehs + padded
        yield entries
        off = end


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fatbin_ptx.py FILE")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fatbin")
        r = subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", sys.argv[1], out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"objcopy failed on '{sys.argv[1]}': {r.stderr.strip()}")
        blob = open(out, "rb").read()
    bad = n = 0
    for entries in fatbins(blob):
        cubins = sorted({sm for k, sm in entries if k == 2})
        ptx = sorted({sm for k, sm in entries if k == 1})
        n += 1
        ok = bool(cubins) and bool(ptx) and max(ptx) >= max(cubins)
        bad += not ok
        print(f"fatbin {n}: cubin sm_{'/sm_'.join(map(str, cubins)) or '-'}; "
              f"PTX compute_{'/compute_'.join(map(str, ptx)) or '-'}{'' if ok else '  <- no PTX for the highest'}")
    if n == 0:
        sys.exit(f"'{sys.argv[1]}' holds no CUDA device code (.nv_fatbin)")
    print(f"{n} fatbins, {bad} without PTX for their highest architecture")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
