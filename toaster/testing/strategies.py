"""Hypothesis strategies for random databases and update streams over given relations.

    @given(stream=update_streams(relations, deletes=True))
    def test_x(stream): ...   # stream: list[Batch], tables first

Draws shrink well: rows are drawn value by value from the same small domains as the seeded
generator (toaster.testing.generator), and a delete picks one of the tuples present at that
point, so multiplicities never go negative.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from hypothesis import strategies as st

from toaster.runtime.batch import Batch
from toaster.schema import RelationDecl
from toaster.testing.generator import value_domain


def rows(decl: RelationDecl, domains: Mapping | None = None) -> st.SearchStrategy:
    """One row of decl with values from its column domains."""
    return st.tuples(*(st.sampled_from(value_domain(decl, j, domains)) for j in range(len(decl.columns))))


def databases(relations: Sequence[RelationDecl], *, max_rows: int = 10,
              domains: Mapping | None = None) -> st.SearchStrategy:
    """{relation name: list of rows} (a bag per relation)."""
    return st.fixed_dictionaries({d.name: st.lists(rows(d, domains), max_size=max_rows) for d in relations})


def database_batches(relations: Sequence[RelationDecl], **kw) -> st.SearchStrategy:
    """A random database as one insert-only batch per relation (tables first)."""
    ordered = sorted(relations, key=lambda d: d.kind != "table")

    def to_batches(db):
        return [Batch.from_rows(d.name, d.types, db[d.name]) for d in ordered if db[d.name]]
    return databases(ordered, **kw).map(to_batches)


@st.composite
def update_streams(draw, relations: Sequence[RelationDecl], *, deletes: bool = True,
                   max_batches: int = 8, max_batch: int = 5, max_table_rows: int = 8,
                   domains: Mapping | None = None) -> list[Batch]:
    """Table loads (insert-only) then up to max_batches stream batches, each for one stream."""
    out: list[Batch] = []
    for d in relations:
        if d.kind == "table":
            trows = draw(st.lists(rows(d, domains), max_size=max_table_rows))
            if trows:
                out.append(Batch.from_rows(d.name, d.types, trows))
    streams = [d for d in relations if d.kind != "table"]
    if not streams:
        return out
    present = {d.name: Counter() for d in streams}
    for _ in range(draw(st.integers(0, max_batches))):
        d = draw(st.sampled_from(streams))
        held = present[d.name]
        brows, signs = [], []
        for _ in range(draw(st.integers(1, max_batch))):
            if deletes and held and draw(st.booleans()):
                row = draw(st.sampled_from(list(held)))
                held[row] -= 1
                if held[row] == 0:
                    del held[row]
                brows.append(row)
                signs.append(-1)
            else:
                row = draw(rows(d, domains))
                held[row] += 1
                brows.append(row)
                signs.append(1)
        out.append(Batch.from_rows(d.name, d.types, brows, signs))
    return out
