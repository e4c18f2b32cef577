"""release_memory hands freed heap pages back to the operating system."""

import sys

import pytest

from rlvr.memory import release_memory


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc's malloc_trim")
def test_freed_small_allocations_leave_the_resident_set_after_release():
    release_memory()
    before = resident_bytes()
    blocks = [bytearray(64 * 1024) for _ in range(4000)]  # 256 MB in blocks below glibc's mmap threshold
    del blocks[:-1]  # the last block stays, pinning the top of the heap as a live tensor would
    assert release_memory()
    assert resident_bytes() - before < 64 * 1024 * 1024
