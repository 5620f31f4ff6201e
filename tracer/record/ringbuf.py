"""A bulk consumer of a BPF ring buffer map: mmap it and take every record at once.

bcc's own consumer (libbpf's ring_buffer__consume) calls back into Python once per record
through ctypes, about a microsecond each; at 200k syscalls/s that consumer alone took about
as much CPU as the BPF programs and, on a small machine, slowed the traced command down.
Here the map is mapped like libbpf does it (kernel/bpf/ringbuf.c):

    offset 0            consumer position page (read-write: we advance it)
    offset 1 page       producer position page (read-only)
    offset 2 pages      the data pages, mapped twice in a row, so a span that wraps around
                        the end is still contiguous in our mapping

Each record is an 8-byte header (u32 length with a busy and a discard bit, u32 page offset)
then the sample, padded to 8 bytes. The producer position moves when a record is *reserved*;
the busy bit clears when it is *committed*, microseconds later (a BPF program cannot sleep
between the two). So while recording, take() copies only up to where the producer was two
takes ago (>= 2 poll intervals old, long committed) with one memcpy and no per-record work;
the records are walked once, after recording, by `samples()`. take(careful=True) -- at the
end, or when the buffer is more than a quarter full -- walks the headers in the mapping and
stops at the first record still being written. A record found still busy in a copied span
(a vCPU stalled for the whole margin) is counted as lost, never decoded half-written.
The BPF side submits with BPF_RB_NO_WAKEUP: records cost no wakeups, the recorder polls.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

BUSY_BIT = 1 << 31
DISCARD_BIT = 1 << 30
RECORD_HEADER = 8

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


@dataclass
class Batch:
    """Samples in one buffer: sample i is data[offsets[i]:offsets[i] + lengths[i]]."""

    data: bytes
    offsets: np.ndarray  # int64
    lengths: np.ndarray  # int64
    busy: int = 0        # records still being written when copied (lost)

    def __len__(self) -> int:
        return len(self.offsets)


class RingReader:
    """Reads the BPF ring buffer map behind `map_fd` (data area of `size` bytes)."""

    def __init__(self, map_fd: int, size: int):
        page = mmap.PAGESIZE
        if size <= 0 or size & (size - 1) or size % page:
            raise ValueError(f"ring buffer size must be a power-of-two number of pages, got {size}")
        self.size = size
        self.mask = size - 1
        self._consumer = mmap.mmap(map_fd, page, mmap.MAP_SHARED,
                                   mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        self._data = mmap.mmap(map_fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ,
                               offset=page)
        self._page = page
        self._seen = [self._cons(), self._cons()]  # producer positions at the last two takes

    def close(self) -> None:
        self._consumer.close()
        self._data.close()

    def pending(self) -> int:
        """Bytes reserved by producers and not yet taken."""
        return self._prod() - self._cons()

    def _cons(self) -> int:
        return _U64.unpack_from(self._consumer, 0)[0]

    def _prod(self) -> int:
        return _U64.unpack_from(self._data, 0)[0]  # x86 is TSO: a plain load is an acquire

    def take(self, careful: bool = False) -> bytes | None:
        """The raw records (headers included) written since the last take, as one span that
        starts and ends on record boundaries; None when there is nothing to take yet."""
        cons, prod = self._cons(), self._prod()
        if careful or prod - cons > self.size // 4:
            end = self._committed_end(cons, prod)
        else:
            end = max(cons, min(self._seen[0], prod))
        self._seen = [self._seen[1], prod]
        if end <= cons:
            return None
        start = self._page + (cons & self.mask)
        span = self._data[start:start + (end - cons)]  # the double mapping keeps it contiguous
        _U64.pack_into(self._consumer, 0, end)  # hand the space back to the producers
        return span

    def _committed_end(self, cons: int, prod: int) -> int:
        data, page, mask, unpack = self._data, self._page, self.mask, _U32.unpack_from
        pos = cons
        while pos < prod:
            header = unpack(data, page + (pos & mask))[0]
            if header & BUSY_BIT:
                break
            pos += ((header & ~(BUSY_BIT | DISCARD_BIT)) + RECORD_HEADER + 7) & ~7
        return pos

    def skip(self) -> None:
        """Drop everything committed so far (before a new recording)."""
        while self.take(careful=True) is not None:
            pass


def samples(spans: list[bytes]) -> Batch:
    """Walk the record headers of taken spans: every committed, not discarded sample."""
    data = spans[0] if len(spans) == 1 else b"".join(spans)
    unpack = _U32.unpack_from
    offsets: list[int] = []
    lengths: list[int] = []
    add_offset, add_length = offsets.append, lengths.append
    busy = 0
    pos, end = 0, len(data)
    while pos + RECORD_HEADER <= end:
        header = unpack(data, pos)[0]
        length = header & ~(BUSY_BIT | DISCARD_BIT)
        if header & BUSY_BIT:
            busy += 1  # copied before it was committed: its bytes may be half written
        elif not header & DISCARD_BIT:
            add_offset(pos + RECORD_HEADER)
            add_length(length)
        pos += (length + RECORD_HEADER + 7) & ~7
    return Batch(data, np.asarray(offsets, np.int64), np.asarray(lengths, np.int64), busy)


def ring_reader(bpf, name: bytes, pages: int) -> RingReader:
    """A RingReader on the ring buffer map `name` of a loaded bcc BPF object."""
    return RingReader(bpf[name].map_fd, pages * os.sysconf("SC_PAGE_SIZE"))
