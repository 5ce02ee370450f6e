"""Byte-level mutation of seed files, shared by the readers' fuzz tests."""

from __future__ import annotations

from hypothesis import strategies as st


def mutations(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    """Seeds with 1-6 byte-level edits: flip, insert, delete, truncate."""

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(1, 6))):
            kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if kind == "flip" and data:
                data[at] = draw(st.integers(0, 255))
            elif kind == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=8))
            elif kind == "delete":
                del data[at : at + draw(st.integers(1, 16))]
            else:
                del data[at:]
        return bytes(data)

    return st.binary(max_size=400) | mutated()
