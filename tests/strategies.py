"""Hypothesis strategies shared by the property tests."""
from __future__ import annotations

from hypothesis import strategies as st

from tahoe.caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from tahoe.immutable.params import EncodingParameters


@st.composite
def encoding_parameters(draw: st.DrawFn, max_total: int = 12,
                        max_segment_sizes: tuple[int, ...] = (1, 7, 64, 1000, 4096, 131072)
                        ) -> EncodingParameters:
    """k <= happy <= N <= max_total and a small maximum segment size (many segments)."""
    total = draw(st.integers(1, max_total))
    needed = draw(st.integers(1, total))
    happy = draw(st.integers(needed, total))
    max_segment_size = draw(st.sampled_from(max_segment_sizes))
    return EncodingParameters(needed, happy, total, max_segment_size)


def chk_read_caps() -> st.SearchStrategy[CHKReadCap]:
    """Arbitrary well-formed CHK read caps."""
    return st.builds(CHKReadCap, st.binary(min_size=16, max_size=16),
                     st.binary(min_size=32, max_size=32), st.integers(0, 300),
                     st.integers(0, 300), st.integers(0, 2 ** 64))


def chk_verify_caps() -> st.SearchStrategy[CHKVerifyCap]:
    """Arbitrary well-formed CHK verify caps."""
    return st.builds(CHKVerifyCap, st.binary(min_size=16, max_size=16),
                     st.binary(min_size=32, max_size=32), st.integers(0, 300),
                     st.integers(0, 300), st.integers(0, 2 ** 64))


def literal_caps() -> st.SearchStrategy[LiteralCap]:
    """LIT caps of up to 55 bytes."""
    return st.builds(LiteralCap, st.binary(max_size=55))


def immutable_caps() -> st.SearchStrategy[CHKReadCap | CHKVerifyCap | LiteralCap]:
    """Any immutable cap."""
    return st.one_of(chk_read_caps(), chk_verify_caps(), literal_caps())


# --- mutable files and directories ------------------------------------------------------------

from tahoe.caps.dirnode import DirectoryCap  # noqa: E402
from tahoe.caps.mutable import (MDMFReadCap, MDMFVerifyCap, MDMFWriteCap, SSKReadCap,  # noqa: E402
                                SSKVerifyCap, SSKWriteCap)

MUTABLE_CAP_CLASSES = (SSKWriteCap, SSKReadCap, SSKVerifyCap, MDMFWriteCap, MDMFReadCap,
                       MDMFVerifyCap)


def mutable_caps() -> st.SearchStrategy:
    """Any of the six mutable file caps, with random keys and fingerprints."""
    return st.builds(lambda cls, first, fingerprint: cls(first, fingerprint),
                     st.sampled_from(MUTABLE_CAP_CLASSES), st.binary(min_size=16, max_size=16),
                     st.binary(min_size=32, max_size=32))


def directory_caps() -> st.SearchStrategy[DirectoryCap]:
    """Directory caps of all nine kinds."""
    return st.builds(DirectoryCap, st.one_of(mutable_caps(), immutable_caps()))


def json_metadata() -> st.SearchStrategy[dict]:
    """JSON objects as clients put in link metadata (finite numbers, nested a little)."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 63, 2 ** 63),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
    values = st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
        max_leaves=6)
    return st.dictionaries(st.text(max_size=10), values, max_size=4)


def child_names() -> st.SearchStrategy[str]:
    """Child names: any non-empty text without lone surrogates."""
    return st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
