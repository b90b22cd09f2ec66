"""Random databases and update streams for differential tests (deterministic by seed).

    batches = random_stream(relations, seed=7, n_batches=20, deletes=True)

Values come from small domains so joins and filters hit often. Tables (kind 'table') come first,
as one insert-only load each; then stream batches of random sizes, each for one stream relation.
With deletes, a delete only removes a tuple present at that point of the stream (earlier
batches and earlier rows of the same batch), so every prefix of the stream leaves a database
with non-negative multiplicities that DuckDB can hold.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Mapping, Sequence

from toaster.runtime.batch import Batch
from toaster.runtime.nulls import physical_rows
from toaster.schema import RelationDecl
from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL

# Small domains: ints hit each other in joins; dates straddle 1995-01-01; floats are exact in
# binary so sums are exact up to rounding in ratios; strings include a leading-space variant.
DEFAULT_DOMAINS: dict[Type, tuple] = {
    INT: (0, 1, 2, 3, 4, 5),
    FLOAT: (0.5, 1.25, 2.0, -1.5, 3.75, 10.0),
    DATE: (19940630, 19941231, 19950101, 19950102, 19960315),
    STRING: ("a", "b", "c", "AB", " a"),
    BOOL: (True, False),
}


def value_domain(decl: RelationDecl, col_index: int, domains: Mapping | None = None) -> tuple:
    """The values column col_index of decl draws from.

    `domains` may map 'REL.COL', a column name 'COL', or a Type to a sequence of values
    (most specific first).
    """
    col = decl.columns[col_index]
    if domains:
        for key in (f"{decl.name}.{col.name}", col.name, col.type):
            if key in domains:
                return tuple(domains[key])
    return DEFAULT_DOMAINS[col.type]


def random_row(rng: random.Random, decl: RelationDecl, domains: Mapping | None = None) -> tuple:
    """A logical row: a nullable column is NULL (None) about as often as each of its values."""
    return tuple(rng.choice(value_domain(decl, j, domains) + ((None,) if c.nullable else ()))
                 for j, c in enumerate(decl.columns) if c.flag_of is None)


def random_stream(relations: Sequence[RelationDecl], *, seed: int = 0, n_batches: int = 20,
                  max_batch: int = 8, min_batch: int = 1, deletes: bool = False,
                  delete_fraction: float = 0.35, table_rows: int = 12,
                  domains: Mapping | None = None) -> list[Batch]:
    """Table loads, then n_batches stream batches of min_batch..max_batch rows each; the first
    batches cover every stream relation once."""
    rng = random.Random(seed)
    out: list[Batch] = []
    for d in relations:
        if d.kind == "table":
            rows = [random_row(rng, d, domains) for _ in range(table_rows)]
            out.append(Batch.from_rows(d.name, d.types, physical_rows(d, rows)))
    streams = [d for d in relations if d.kind != "table"]
    if not streams:
        return out
    present = {d.name: Counter() for d in streams}
    # the first batches visit every stream once (in random order) so short streams still join
    firsts = rng.sample(streams, len(streams))
    for i in range(n_batches):
        d = firsts[i] if i < len(firsts) else rng.choice(streams)
        held = present[d.name]
        rows, signs = [], []
        for _ in range(rng.randint(min_batch, max_batch)):
            if deletes and held and rng.random() < delete_fraction:
                row = rng.choice(list(held))   # insertion order: deterministic
                held[row] -= 1
                if held[row] == 0:
                    del held[row]
                rows.append(row)
                signs.append(-1)
            else:
                row = random_row(rng, d, domains)
                held[row] += 1
                rows.append(row)
                signs.append(1)
        out.append(Batch.from_rows(d.name, d.types, physical_rows(d, rows), signs))
    return out


def split_batches(batches: Sequence[Batch], size: int = 1) -> list[Batch]:
    """Cut every batch into batches of at most `size` rows (same order); size 1 gives single tuples."""
    out = []
    for b in batches:
        for i in range(0, len(b), size):
            out.append(Batch(b.relation, b.signs[i:i + size], tuple(c[i:i + size] for c in b.columns)))
    return out


def merge_batches(batches: Sequence[Batch], size: int) -> list[Batch]:
    """Concatenate consecutive batches of the same relation into batches of up to `size` rows."""
    import numpy as np
    out: list[Batch] = []
    for b in batches:
        if out and out[-1].relation == b.relation and len(out[-1]) + len(b) <= size:
            last = out[-1]
            out[-1] = Batch(b.relation, np.concatenate([last.signs, b.signs]),
                            tuple(np.concatenate([x, y]) for x, y in zip(last.columns, b.columns)))
        else:
            out.append(b)
    return out
