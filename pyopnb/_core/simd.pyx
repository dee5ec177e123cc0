# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The vector path of the compiled core's kernels: SSE2 (every x86-64 CPU),
AVX2 or AVX-512, the widest this CPU runs unless ``PYOPNB_SIMD`` (sse2,
avx2, avx512) caps it. Every path gives the same bits (simd.h), so the cap
is for the tests and the fingerprint. The crossproduct reads the path at
each call, the projection at each projection, an evaluator once, when its
scratch is made."""
from libc.stdlib cimport getenv

cdef extern from "_core/simd.h" nogil:
    int pyopnb_simd_best()

__all__ = ["simd", "simd_level", "simd_levels"]

_LEVELS = ("sse2", "avx2", "avx512")

_level_of = {}  # PYOPNB_SIMD's value -> the path (read at every call: tests change it)


cdef int simd_path() except -1:
    """The path's index in _LEVELS (0 SSE2, 1 AVX2, 2 AVX-512)."""
    # the C library's getenv: os.environ writes through to it, and it needs
    # no Python mapping built at every call
    cdef const char* env = getenv(b"PYOPNB_SIMD")
    raw = b"" if env == NULL else <bytes>env
    level = _level_of.get(raw)
    if level is None:
        level = _level_of[raw] = _level_for(raw)
    return level


cdef int _level_for(bytes raw) except -1:
    best = pyopnb_simd_best()
    cap = raw.decode(errors="replace").strip().lower()
    if not cap:
        return best
    if cap not in _LEVELS:
        raise ValueError(f"PYOPNB_SIMD must be one of {', '.join(_LEVELS)}, got {cap!r}")
    return min(best, _LEVELS.index(cap))


def simd_levels():
    """The vector paths this CPU runs, narrowest first."""
    return list(_LEVELS[: pyopnb_simd_best() + 1])


def simd():
    """The vector path the compiled core takes (PYOPNB_SIMD caps it)."""
    return _LEVELS[simd_path()]


def simd_level():
    """:func:`simd` as its index in :func:`simd_levels` (0 SSE2, 1 AVX2, 2 AVX-512)."""
    return simd_path()
