"""The one engine interface every backend implements.

    engine = toaster.compile_sql(sql_text).engine("llvm")   # or "interp", "spark"
    engine.load_table("NATION", rows)                          # static tables first
    engine.apply(Batch.from_rows("R", types, rows, signs))     # a batch of inserts/deletes
    engine.apply_many([batch_r, batch_s])                      # one step over several relations
    engine.insert("R", (1, 2)); engine.delete("R", (1, 2))    # single tuples
    engine.results()  -> [ResultTable]                          # every SELECT's current view
    engine.read_map("QUERY_1_TOTAL") -> {key tuple: value}     # any materialized map
    engine.checkpoint("state/ckpt", position)                  # durable state (docs/checkpoints.md)
    engine.restore("state/ckpt") -> position                   # into an engine of the same program

A batch is validated whole before any of it is applied: a malformed row rejects the batch
and leaves every view as it was.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from toaster.errors import CardinalityError, InputError, UnknownNameError
from toaster.runtime.batch import Batch
from toaster.runtime.checks import canonical_batch, check_nonfinite
from toaster.runtime.interleaved import Interleaved, expand_interleaved
from toaster.runtime.nulls import physical_batch, physical_rows
from toaster.runtime.reads import relations_read
from toaster.types import Type, INT, FLOAT, DATE, int_to_date


@dataclass(frozen=True)
class ResultTable:
    name: str
    columns: tuple        # column names
    types: tuple          # Types
    key_columns: int      # the first key_columns columns are the key
    rows: tuple           # tuple of row tuples (runtime representation), sorted by key

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "columns": list(self.columns),
            "key_columns": self.key_columns,
            "rows": [[display_value(v, t) for v, t in zip(r, self.types)] for r in self.rows],
        }


def display_value(v, t: Type):
    if v is None:
        return None
    if t == DATE:
        return int_to_date(v)
    if t == FLOAT:
        return float(v)
    if t == INT:
        return int(v)
    return v


class Engine(ABC):
    """Base class: validation, the single-tuple helpers and result assembly."""

    backend = "?"

    def __init__(self, relations, queries):
        self.relations = {r.name: r for r in relations}
        self.queries = tuple(queries)
        self._tables_loaded: set[str] = set()
        self._streamed = False        # a stream batch was applied: tables are closed


    # ---------------------------------------------------------------- input
    def relations_needed(self) -> frozenset:
        """Relations whose updates can change a view; readers may skip the others."""
        return frozenset(self.relations)

    def columns_needed(self, relation: str) -> tuple:
        """Per column of `relation`, whether this engine reads it (False: a batch may carry
        None there, and readers need not convert it)."""
        return (True,) * len(self._decl(relation).columns)

    def load_table(self, relation: str, rows) -> None:
        decl = self._decl(relation)
        if decl.kind != "table":
            raise InputError(f"{relation} is a STREAM; load_table is for static TABLEs")
        rows = physical_rows(decl, rows if isinstance(rows, (list, tuple)) else list(rows))
        self.apply(Batch.from_rows(decl.name, decl.types, rows, names=[c.name for c in decl.columns]))
        self._tables_loaded.add(decl.name)

    def insert(self, relation: str, row) -> None:
        self.apply(self._one_row(relation, row, 1))

    def delete(self, relation: str, row) -> None:
        self.apply(self._one_row(relation, row, -1))

    def _one_row(self, relation: str, row, sign: int) -> Batch:
        decl = self._decl(relation)
        return Batch.from_rows(decl.name, decl.types, physical_rows(decl, [row]), [sign],
                               names=[c.name for c in decl.columns])

    def apply(self, batch: Batch) -> None:
        """Apply a batch atomically (checked and converted first; rejected whole if malformed)."""
        if isinstance(batch, Interleaved):
            return self.apply_many((batch,))
        batch = self._checked(batch, self._streamed)
        if batch is None:
            return
        self._apply(batch)
        if self._decl(batch.relation).kind != "table":
            self._streamed = True

    def apply_many(self, batches) -> None:
        """Apply several batches (one step of a multi-relation stream: a Batch per relation) in
        order, as one step: the views after it are those after applying them one after another.
        All are checked first (one malformed batch rejects them all). An engine may run them
        together: spark plans them into one job and undoes all of them if it fails; the others
        apply them one after another (each atomic). An Interleaved stands for its runs."""
        checked, streamed = [], self._streamed
        for batch in expand_interleaved(batches):
            b = self._checked(batch, streamed)
            if b is not None:
                checked.append(b)
                streamed = streamed or self._decl(b.relation).kind != "table"
        if checked:
            self._apply_many(checked)
            self._streamed = streamed

    def _checked(self, batch, streamed: bool) -> Batch | None:
        """The batch checked and converted (None if empty)."""
        if not isinstance(batch, Batch):
            raise InputError(f"apply() expects a Batch, got {type(batch).__name__}")
        decl = self._decl(batch.relation)
        batch = canonical_batch(decl, physical_batch(decl, batch), self.columns_needed(decl.name))
        if len(batch) == 0:
            return None
        check_nonfinite(decl, batch)
        if decl.kind == "table" and streamed:
            raise InputError(f"TABLE {decl.name} loaded after stream events (load every table first)")
        return batch

    def _apply_many(self, batches: list) -> None:
        for b in batches:
            self._apply(b)

    def _decl(self, relation: str):
        if not isinstance(relation, str):
            raise InputError(f"relation name must be a string, got {type(relation).__name__}")
        try:
            return self.relations[relation.upper()]
        except KeyError:
            raise InputError(f"unknown relation {relation!r}") from None

    def _unknown_map(self, name) -> UnknownNameError:
        return UnknownNameError(f"unknown map {name!r}")

    # --------------------------------------------------------------- output
    @abstractmethod
    def _apply(self, batch: Batch) -> None: ...

    @abstractmethod
    def read_map(self, name: str) -> dict:
        """Nonzero entries of a materialized map: {key tuple: value}."""

    def results(self) -> list[ResultTable]:
        return [self.result(q.name) for q in self.queries]

    def result(self, name: str) -> ResultTable:
        q = next((q for q in self.queries if q.name == name), None)
        if q is None:
            raise UnknownNameError(f"unknown result {name!r}")
        for check_map, message in q.checks:
            if any(v != 0 for v in self.read_map(check_map).values()):
                raise CardinalityError(message)
        if q.value_terms is None:
            rows = self._simple_rows(q)
        else:
            rows = self._term_rows(q)
        shown = [i for i in range(len(q.columns)) if i not in q.flag_keys]
        if q.null_keys:      # NULL keys: the value column where its flag is 1; flags not shown
            rows = [tuple(None if f >= 0 and r[f] else r[i] for i, f in _with_flags(q, shown)) for r in rows]
            if not q.order_by:
                rows.sort(key=_sort_key)
        return ResultTable(q.name, tuple(q.columns[i].name for i in shown), tuple(q.columns[i].type for i in shown),
                           len(q.key_columns) - len(q.flag_keys), tuple(rows))

    def _simple_rows(self, q) -> list:
        per_map = [self.read_map(m) for m in q.value_maps]
        keys = set()
        for d in per_map:
            keys.update(d)
        rows = []
        for k in keys:
            vals = tuple(d.get(k, 0) for d in per_map)
            if all(v == 0 for v in vals):
                continue
            rows.append(tuple(k) + tuple(_cast(v, c.type) for v, c in zip(vals, q.value_columns)))
        rows.sort(key=_sort_key)
        return rows

    def _term_rows(self, q) -> list:
        """Reconstitute a piecewise-materialized result (toaster.calculus.results)."""
        from toaster.calculus.results import RowContext, eval_result, null_last_key
        nk = len(q.key_columns)
        maps = {m: self.read_map(m) for m in q.value_maps}
        ctx = RowContext(maps, nk)
        if nk == 0:
            keys = {()}
        elif q.group_map is not None:
            keys = {tuple(k) for k, v in maps[q.group_map].items() if v != 0}
        else:
            keys = {tuple(k[:nk]) for d in maps.values() for k, v in d.items() if v != 0}
        rows = []
        for k in keys:
            if q.having is not None and not eval_result(q.having, k, ctx):
                continue
            vals = tuple(_cast(eval_result(t, k, ctx), c.type) for t, c in zip(q.value_terms, q.value_columns))
            if all(isinstance(v, (int, float)) and v == 0 for v in vals):
                continue
            rows.append(k + vals)
        flags = dict(q.null_keys)      # ties under ORDER BY: by the key, NULL keys last
        rows.sort(key=lambda r: _sort_key(tuple(None if i in flags and r[flags[i]] else v for i, v in enumerate(r))))
        for term, descending in reversed(q.order_by):
            # stable sorts from the last ORDER BY item to the first; NULLs last either way
            rows.sort(key=lambda r: null_last_key(eval_result(term, r[:nk], ctx), descending), reverse=descending)
        if q.limit is not None:
            rows = rows[:q.limit]
        return rows

    # ----------------------------------------------------------- durability
    def checkpoint(self, path, position=None) -> str:
        """Write the engine's state to the directory `path` atomically (docs/checkpoints.md).
        `position` (JSON data, e.g. the input consumed so far) is stored with it."""
        from toaster.checkpoint import write_checkpoint
        return write_checkpoint(path, self._checkpoint_state(with_tables=True), position)

    def restore(self, path):
        """Replace the engine's state by the checkpoint at `path`, written by an engine of the
        same program (any backend keeping the same kind of state); returns its position."""
        from toaster.checkpoint import CheckpointError, read_checkpoint, program_mismatch, read_manifest
        mine = self._checkpoint_state(with_tables=False)
        manifest = read_manifest(path)
        if manifest.get("state") != mine.state:
            raise CheckpointError(
                f"{path}: written by the {manifest.get('backend')} backend, which keeps "
                f"{manifest.get('state')}; the {self.backend} backend keeps {mine.state} "
                f"and cannot restore it")
        if manifest.get("fingerprint") != mine.fingerprint:
            raise CheckpointError(f"{path}: written for another program: "
                                  f"{program_mismatch(manifest.get('program') or {}, mine.program)}")
        ckpt = read_checkpoint(path)
        self._restore_tables(ckpt.tables)
        self._streamed = bool(manifest.get("streamed"))
        return ckpt.position

    def _checkpoint_state(self, with_tables: bool):
        """A toaster.checkpoint.CheckpointState of this engine (tables only if with_tables)."""
        from toaster.errors import UnsupportedError
        raise UnsupportedError(f"checkpoint on the {self.backend} backend")

    def _map_state(self, layouts, with_tables: bool):
        """The CheckpointState of an engine whose state is its maps (`layouts`)."""
        from toaster.checkpoint import CheckpointState, describe_program
        from toaster.m3.batch_delta import is_delta_map_name
        # a batch-mode program's pre-aggregated delta maps are refilled by every batch: not state
        layouts = tuple(t for t in layouts if not is_delta_map_name(t.name, self.relations))
        tables = self._read_maps([t.name for t in layouts]) if with_tables else {}
        return CheckpointState(self.backend, "maps", describe_program(self.relations.values(), self.queries, layouts),
                               layouts, tables, self._streamed)

    def _read_maps(self, names) -> dict:
        """{name: read_map(name)} (an engine may read them together: spark, in one job)."""
        return {n: self.read_map(n) for n in names}

    def _restore_tables(self, tables: dict) -> None:
        """Replace every stored table by `tables` (name -> {key tuple: value}, all present)."""
        from toaster.errors import UnsupportedError
        raise UnsupportedError(f"restore on the {self.backend} backend")

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def net_delta(batch: Batch) -> dict:
    """The batch as a delta relation: net multiplicity per distinct row, zeros dropped."""
    delta: dict = {}
    for sign, row in batch.rows():
        delta[row] = delta.get(row, 0) + sign
    return {k: v for k, v in delta.items() if v != 0}


class TriggerEngine(Engine):
    """An engine that interprets a trigger program in Python: single-tuple triggers fire per
    row in order (mode 'tuple'); a batch trigger fires once with the batch's net delta
    (mode 'batch'). Subclasses say how to run one trigger of each kind."""

    def __init__(self, program):
        super().__init__(program.relations, program.queries)
        self.program = program
        self.triggers = {(t.event.kind, t.event.relation): t for t in program.triggers}

    def relations_needed(self) -> frozenset:
        return relations_read(self.program)

    def _start(self) -> None:
        """Run the ON SYSTEM READY trigger (initial map values); subclasses call it once their
        maps exist."""
        trig = self.triggers.get(("ready", ""))
        if trig is not None:
            self._run_tuple(trig, ())

    def _apply(self, batch: Batch) -> None:
        rel = batch.relation.upper()
        if self.program.mode == "batch":
            trig = self.triggers.get(("batch", rel))
            if trig is not None:
                self._run_batch(trig, rel, net_delta(batch))
            return
        for sign, row in batch.rows():
            trig = self.triggers.get(("insert" if sign > 0 else "delete", rel))
            if trig is not None:
                self._run_tuple(trig, row)

    @abstractmethod
    def _run_tuple(self, trigger, row: tuple) -> None: ...

    @abstractmethod
    def _run_batch(self, trigger, relation: str, delta: dict) -> None: ...


def _with_flags(q, shown):
    """(column, its flag column or a never-set position) for the shown columns."""
    flags = dict(q.null_keys)
    return [(i, flags.get(i, -1)) for i in shown]


def _cast(v, t: Type):
    if v is None:          # a NULL value (toaster.calculus.results null_unless)
        return None
    if t == INT:
        return int(v)
    if t == FLOAT:
        return float(v)
    return v


def _sort_key(row):
    return tuple((2, 0) if v is None else (0, v) if not isinstance(v, str) else (1, v) for v in row)
