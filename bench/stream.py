"""A generated stream, parsed once into columnar form and cut into Batches for the harness.

    es = load_event_stream(schema_sql_text)            # parses every declared source
    batches = es.batches(size=100, relations={"LINEITEM", "ORDERS"})   # [[Batch per relation]]

Parsing uses toaster's own readers (the Arrow CSV reader `--run` uses, the orderbook adaptor),
so parse time is the time a toaster user would pay; it is measured here, apart from view maintenance. The
global event order comes from the CSV `seq` field (TPC-H streams, one file per relation) or
from the line number in the shared log (order-book streams, several relations per file).

A batch of size N holds the next N events of the stream, as one Batch per relation
(toaster.runtime.stream_order, which `--run` uses too); the harness applies a whole group, then
refreshes/checks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from toaster.errors import InputError
from toaster.runtime.batch import Batch
from toaster.runtime.csv_source import read_source, resolve_path
from toaster.runtime.stream_order import cut_windows, merge_by_seq
from toaster.schema import RelationDecl


@dataclass
class EventStream:
    relations: tuple                 # every declared RelationDecl
    tables: list                     # [Batch] static table loads
    per_relation: dict               # stream name -> Batch of all its events (file order)
    order_rel: np.ndarray            # per global event: index into stream_names
    order_row: np.ndarray            # per global event: row index in per_relation[...]
    stream_names: tuple
    parse_seconds: float
    lines_parsed: int = 0
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.order_rel)

    def count(self, relations=None) -> int:
        return int(self._mask(relations).sum()) if relations is not None else len(self)

    def _mask(self, relations) -> np.ndarray:
        want = np.array([n in relations for n in self.stream_names], dtype=bool)
        return want[self.order_rel] if len(want) else np.zeros(len(self.order_rel), dtype=bool)

    def selected(self, relations=None, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(relation index, row index) of the events of these relations, in stream order."""
        rel, row = self.order_rel, self.order_row
        if relations is not None:
            m = self._mask(relations)
            rel, row = rel[m], row[m]
        if limit is not None:
            rel, row = rel[:limit], row[:limit]
        return rel, row

    def batches(self, size: int, relations=None, limit: int | None = None) -> list[list[Batch]]:
        """The stream (restricted to `relations`, first `limit` events) cut into batches of `size`
        events; each batch is a list of one Batch per relation it touches (see the module doc)."""
        rel, row = self.selected(relations, limit)
        return cut_windows([self.per_relation[n] for n in self.stream_names], rel, row, size)

    def prefix_batches(self, n_events: int, relations=None) -> list[Batch]:
        """The first n_events (of these relations) as one batch per relation (for checking)."""
        rel, row = self.selected(relations, n_events)
        out = []
        for r in sorted(set(rel.tolist())):
            idx = row[rel == r]
            b = self.per_relation[self.stream_names[r]]
            out.append(b.take(idx))
        return out


def load_event_stream(schema_sql: str, base_dir: str | None = None) -> EventStream:
    """Parse every source declared in schema_sql (a program of CREATE statements)."""
    from toaster.frontend.parser import parse_sql
    relations = tuple(parse_sql(schema_sql).relations)
    t0 = time.perf_counter()
    tables, per_relation, seqs = [], {}, {}
    lines = 0
    for d in relations:
        if d.source is None:
            continue
        if d.kind == "table":
            tables.extend(read_source(d, None, base_dir))
            continue
        path = resolve_path(d.source.path, base_dir)
        if d.source.adaptor == "csv":
            batch, seq = _read_csv_with_seq(d, base_dir)
            lines += len(batch)
        elif d.source.adaptor == "orderbook":
            with open(path, encoding="utf-8", newline="") as fh:
                text = fh.read().splitlines()
            lines += len(text)
            batch, seq = _parse_orderbook_with_seq(d, text, path)
        else:
            raise InputError(f"{d.name}: bench streams read CSV or orderbook sources, not {d.source.adaptor!r}")
        per_relation[d.name] = batch
        seqs[d.name] = seq
    names = tuple(per_relation)
    order_rel, order_row = merge_by_seq([seqs[n] for n in names])
    es = EventStream(relations, tables, per_relation, order_rel, order_row, names,
                     time.perf_counter() - t0, lines)
    return es


def _read_csv_with_seq(d: RelationDecl, base_dir: str | None) -> tuple[Batch, np.ndarray]:
    """The whole file as one batch, read as `--run` reads it (Arrow; strings stay Arrow arrays)."""
    batches = read_source(d, None, base_dir)
    batch = batches[0] if len(batches) == 1 else Batch.from_rows(d.name, d.types, []) if not batches \
        else Batch.concat(batches)
    # no sequence numbers: the file's events come in file order, line i beside the others' line i
    seq = batch.seq if batch.seq is not None else np.arange(len(batch), dtype=np.int64)
    return batch, seq


def _parse_orderbook_with_seq(d: RelationDecl, text: list[str], path: str) -> tuple[Batch, np.ndarray]:
    from toaster.runtime.orderbook import parse_orderbook_lines
    batches = list(parse_orderbook_lines(d, text, path=path, line_numbers=True))
    if not batches:
        return Batch.from_rows(d.name, d.types, []), np.zeros(0, dtype=np.int64)
    batch = batches[0] if len(batches) == 1 else Batch.concat(batches)
    return Batch(batch.relation, batch.signs, batch.columns, checked=batch.checked), batch.seq
