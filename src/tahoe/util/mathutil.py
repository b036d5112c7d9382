"""Integer helpers used for segment and tree geometry (``reference/immutable.md`` §0)."""


def div_ceil(n: int, d: int) -> int:
    """Return the smallest q with q*d >= n (for n >= 0, d > 0)."""
    return (n + d - 1) // d


def next_multiple(n: int, k: int) -> int:
    """Return the smallest multiple of k that is >= n."""
    return div_ceil(n, k) * k


def next_power_of_two(n: int) -> int:
    """Return the smallest power of two >= n, with 1 for n <= 1."""
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()


def log2_exact(n: int) -> int:
    """Return log2(n) for a power of two n."""
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1
