"""Zero the GPU code a borrowed machine's chip cannot run, so ONNX Runtime's CUDA provider fits a
64 MiB transfer once compressed.

libonnxruntime_providers_cuda.so (230 MB) holds each kernel module as a fatbin with a cubin per
architecture (sm_75 … sm_120). The driver loads the entry whose architecture matches the device and
never reads the others; this keeps every header and zeroes the payloads of the other architectures,
only in modules that have a cubin for KEEP (a module without one is left whole).
    python3 prune-fatbin.py IN.so OUT.so 90
"""
import struct
import sys

MAGIC = struct.pack('<I', 0xBA55ED50)


def entries(data, start, size):
    at, end = start, start + size
    while at < end:
        kind, _version, header_size, padded = struct.unpack_from('<HHIQ', data, at)
        arch = struct.unpack_from('<I', data, at + 28)[0]
        if header_size < 64 or padded > size:
            return
        yield at, kind, arch, header_size, padded
        at += header_size + padded


def prune(data, keep):
    at, zeroed, whole = 0, 0, 0
    while (found := data.find(MAGIC, at)) >= 0:
        version, header_size, fat_size = struct.unpack_from('<HHQ', data, found + 4)
        if version != 1 or header_size != 16 or fat_size == 0 or found + 16 + fat_size > len(data):
            at = found + 4
            continue
        module = list(entries(data, found + 16, fat_size))
        if any(kind == 2 and arch == keep for _, kind, arch, _, _ in module):
            for entry, _kind, arch, entry_header, padded in module:
                if arch != keep:
                    data[entry + entry_header:entry + entry_header + padded] = bytes(padded)
                    zeroed += padded
        else:
            whole += 1
        at = found + 16 + fat_size
    return zeroed, whole


if __name__ == '__main__':
    source, target, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = bytearray(open(source, 'rb').read())
    zeroed, whole = prune(data, keep)
    open(target, 'wb').write(data)
    print(f'zeroed {zeroed / 1e6:.0f} MB of other architectures; {whole} module(s) without sm_{keep} left whole')
