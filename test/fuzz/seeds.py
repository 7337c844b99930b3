#!/usr/bin/env python3
"""Writes the seed corpora of the decoder fuzz targets (test/fuzz/corpus/
{wire,gpu_wire,proxy}): valid encodings, as the senders write them, with
the selector and limit bytes each target reads first (see the targets'
comments), plus a few near misses. Layouts: progress/wire.h,
progress/ucx/ucx_wire.h, progress/ofi/ofi_wire.h, src/p2p/gpu_wire.h,
include/mpix_device/proxy.h.
Run from the repository root; it replaces those three folders."""
import hashlib
import os
import shutil
import struct

def header(tag, kind, nbytes, data_tag=0, flags=0):
    return struct.pack('<iIQiI', tag, kind, nbytes, data_tag, flags)

def envelope(h, link=1, source=0, world=0, seq=0, credit=0, cookie=0):
    return struct.pack('<IiiIII', link, source, world, seq, credit, 0) + h + struct.pack('<Q', cookie)

def ofi_envelope(frame, h, link=1, source=0, world=0, seq=0, credit=0, cookie=0, addr=0, key=0):
    return struct.pack('<IIiiII', frame, link, source, world, seq, credit) + h + struct.pack('<QQQ', cookie, addr, key)

def control(kind, world, credit, cookie):
    return struct.pack('<IiIIQ', kind, world, credit, 0, cookie)

def rts(ipc, size=1 << 20, offset=0, device=0):
    return struct.pack('<QiiQQQII', 0x1234, 4242, device, 0x7f0000000000, size, offset, 1 if ipc else 0, 0) + bytes(range(64))

def reply(mode, chunk):
    return struct.pack('<IIQ', mode, 0, chunk)

def pdesc(ticket, op, peer, tag, nbytes, buf):
    return struct.pack('<IIiiQQ', ticket + 1, op, peer, tag, nbytes, buf) + bytes(32)

def write(name, inputs):
    folder = os.path.join('test/fuzz/corpus', name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for data in inputs:
        with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), 'wb') as f:
            f.write(data)

wire = []
LIMITS = 2  # tag_ub 32767
for h, payload in [(header(5, 1, 4), b'abcd'), (header(0, 1, 0), b''), (header(9, 1, 3, 0, 1), b'xyz'),
                   (header(7, 2, 1 << 20, 3), b''), (header(7, 4, 1 << 20, 3), b''), (header(7, 3, 1 << 20, 3), rts(True))]:
    wire.append(bytes([0, LIMITS]) + h + payload)                    # pmpi landing buffer
for h, data, rndv, cookie in [(header(5, 1, 4), b'abcd', 0, 0), (header(9, 1, 3, 0, 1), b'xyz', 0, 7),
                              (header(7, 2, 100, 3), bytes(100), 1, 0), (header(7, 3, 4096, 3), rts(True), 0, 0)]:
    env = envelope(h, source=1, world=1, seq=2, credit=64, cookie=cookie)
    # selector, limits, world size 4, link size 2, rendezvous flag and header length
    wire.append(bytes([1, LIMITS, 3, 1, len(env) << 1 | rndv]) + env + data)
for c in [control(1, 1, 4096, 0), control(2, 0, 0, 9)]:
    wire.append(bytes([2, 3]) + c)
wire.append(bytes([0, LIMITS]) + header(5, 1, 4)[:20])              # truncated
wire.append(bytes([2, 3]) + control(2, 0, 0, 9)[:23])
# libfabric frames: selector, limits, world size 4 and link size 2, frame
OFI_SIZES = 3 | 1 << 3
for f in [ofi_envelope(1, header(5, 1, 4), source=1, world=1, seq=2, credit=64) + b'abcd',
          ofi_envelope(1, header(9, 1, 3, 0, 1), source=1, world=1, cookie=7) + b'xyz',
          ofi_envelope(2, header(7, 2, 1 << 20, 3), source=1, world=1, cookie=5, addr=0x7f0000001000, key=42),
          ofi_envelope(1, header(7, 3, 4096, 3), source=1, world=1) + rts(True),
          control(3, 1, 4096, 0), control(4, 0, 0, 9), control(5, 2, 0, 5)]:
    wire.append(bytes([3, LIMITS, OFI_SIZES]) + f)
wire.append(bytes([3, LIMITS, OFI_SIZES]) + ofi_envelope(2, header(7, 2, 64, 3), cookie=5)[:70])  # truncated

gpu = []
for r, nbytes in [(rts(True, 1 << 20, 0), 1 << 20), (rts(True, 1 << 20, 4096), 4096), (rts(False, 0, 0), 1 << 30)]:
    gpu.append(bytes([0]) + struct.pack('<Q', nbytes) + r)
gpu.append(bytes([0]) + struct.pack('<Q', 1) + rts(True)[:100])
for ipc, r in [(1, reply(1, 0)), (0, reply(2, 4 << 20)), (1, reply(2, 4096))]:
    gpu.append(bytes([1, ipc]) + r)

proxy = []
for slots, inl, op, nbytes, buf in [(6, 8, 1, 8, 0), (6, 8, 2, 32, 0), (6, 8, 1, 256, 0), (6, 8, 2, 200, 0),
                                    (6, 8, 1, 4096, 0x7f0000001000), (0, 0, 2, 64, 0x7f0000001000)]:
    ticket, slot = 1000, 5 % (1 << slots)
    head = bytes([slots, inl, 4, 2]) + struct.pack('<IQ', ticket, (ticket + 1) << 32 | slot)
    proxy.append(head + pdesc(ticket, op, 3, 11, nbytes, buf))
proxy.append(bytes([6, 8, 4, 2]) + struct.pack('<IQ', 7, 8 << 32 | 3) + pdesc(7, 1, 1, 0, 4, 0)[:40])

write('wire', wire)
write('gpu_wire', gpu)
write('proxy', proxy)
