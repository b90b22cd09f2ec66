"""Durable engine state: checkpoints on disk (format documented in docs/checkpoints.md).

A checkpoint is a directory:

    manifest.json        format and toaster version, backend, program fingerprint, input
                         position, and the list of tables with their key and value types
    <table>.parquet      one per map (or, for calc, per base relation): key_0..key_{K-1}, value

It is written into a temporary sibling directory, fsynced, and renamed into place, so a
directory under its final name is always complete; a crash mid-write leaves only a `.tmp-`
directory, which readers ignore.

    write_checkpoint(path, state, position)    # state: CheckpointState from an engine
    read_checkpoint(path) -> Checkpoint
    latest_checkpoint(dir) -> path | None      # newest complete `ckpt-<N>` in a --checkpoint-dir
"""
from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Sequence

from toaster.errors import ToasterError
from toaster.types import Type, INT, FLOAT, DATE, STRING, BOOL

FORMAT = "toaster-checkpoint"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CHECKPOINT_PREFIX = "ckpt-"
_CHECKPOINT_NAME = re.compile(r"^ckpt-(\d+)$")


class CheckpointError(ToasterError):
    """A checkpoint that cannot be written or restored (missing, torn, another program, ...)."""
    kind = "checkpoint error"


@dataclass(frozen=True)
class TableLayout:
    """One stored table: a map (keys -> value) or a base relation (row -> multiplicity)."""
    name: str
    key_types: tuple      # tuple[Type, ...]
    value_type: Type      # INT or FLOAT

    def to_json(self) -> dict:
        return {"name": self.name, "key_types": [t.value for t in self.key_types],
                "value_type": self.value_type.value}

    @staticmethod
    def from_json(d: dict) -> "TableLayout":
        return TableLayout(d["name"], tuple(Type(t) for t in d["key_types"]), Type(d["value_type"]))


@dataclass(frozen=True)
class CheckpointState:
    """What an engine hands to write_checkpoint (and what restore checks against)."""
    backend: str
    state: str                  # 'maps' (trigger engines) | 'relations' (calc)
    program: dict               # relations, queries, tables: the fingerprinted description
    layouts: tuple              # tuple[TableLayout, ...]
    tables: dict = field(default_factory=dict)   # name -> {key tuple: value}
    streamed: bool = False      # a stream batch was applied (tables are closed)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.program)


@dataclass(frozen=True)
class Checkpoint:
    path: str
    manifest: dict
    layouts: tuple
    tables: dict                # name -> {key tuple: value}

    @property
    def position(self):
        return self.manifest.get("position")


def describe_program(relations, queries, layouts: Sequence[TableLayout]) -> dict:
    """The part of a program a checkpoint depends on: relation schemas, the results' shapes,
    and the stored tables' names and types (JSON, so a mismatch can be named)."""
    return {
        "relations": [{"name": r.name, "kind": r.kind,
                       "columns": [[c.name, c.type.value] for c in r.columns]} for r in relations],
        "queries": hashlib.sha256(repr(tuple(queries)).encode()).hexdigest(),
        "tables": [t.to_json() for t in layouts],
    }


def fingerprint(program: dict) -> str:
    return hashlib.sha256(json.dumps(program, sort_keys=True).encode()).hexdigest()


def program_mismatch(stored: dict, mine: dict) -> str:
    """A one-line description of the first difference between two program descriptions."""
    for what in ("relations", "tables"):
        a = {d["name"]: d for d in stored.get(what, [])}
        b = {d["name"]: d for d in mine.get(what, [])}
        label = "relation" if what == "relations" else "map"
        for name in b:
            if name not in a:
                return f"{label} {name} is not in the checkpoint"
        for name in a:
            if name not in b:
                return f"the checkpoint has {label} {name}, this program does not"
            if a[name] != b[name]:
                return f"{label} {name} differs (checkpoint {_brief(a[name])}, program {_brief(b[name])})"
    if stored.get("queries") != mine.get("queries"):
        return "the SELECT results differ"
    return "the program differs"


def _brief(d: dict) -> str:
    if "columns" in d:
        return f"{d['kind']}({', '.join(f'{n} {t}' for n, t in d['columns'])})"
    return f"[{', '.join(d['key_types'])}] -> {d['value_type']}"


def toaster_version() -> str:
    try:
        from importlib.metadata import version
        return version("toaster")
    except Exception:      # not installed as a distribution (running from a source tree)
        return "unknown"


# ------------------------------------------------------------------ writing
def write_checkpoint(path, state: CheckpointState, position=None) -> str:
    """Write `state` as a checkpoint directory at `path`, atomically; returns the path.
    An existing checkpoint at `path` is replaced."""
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = os.path.join(parent, f".{os.path.basename(path)}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.mkdir(tmp)
    except OSError as e:
        raise CheckpointError(f"cannot write checkpoint {path}: {e.strerror or e}") from None
    try:
        _write_into(tmp, path, parent, state, position)
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)     # a failed write leaves nothing behind
        if isinstance(e, OSError):
            raise CheckpointError(f"cannot write checkpoint {path}: {e.strerror or e}") from None
        raise
    return path


def _write_into(tmp: str, path: str, parent: str, state: CheckpointState, position) -> None:
    import pyarrow.parquet as pq
    files = []
    for i, layout in enumerate(state.layouts):
        fname = f"{i:04d}-{_safe(layout.name)}.parquet"
        table = _to_arrow(layout, state.tables.get(layout.name, {}))
        pq.write_table(table, os.path.join(tmp, fname))
        _fsync_file(os.path.join(tmp, fname))
        files.append({**layout.to_json(), "file": fname, "rows": table.num_rows})
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "toaster_version": toaster_version(),
        "backend": state.backend,
        "state": state.state,
        "fingerprint": state.fingerprint,
        "program": state.program,
        "streamed": state.streamed,
        "position": position,
        "tables": files,
        "written_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    with open(os.path.join(tmp, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    _fsync_dir(tmp)
    old = None
    if os.path.exists(path):     # replace: move the old one aside, then swap in the new one
        old = f"{tmp}.old"
        os.rename(path, old)
    os.rename(tmp, path)
    _fsync_dir(parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80]


def _fsync_file(p: str) -> None:
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(p: str) -> None:
    try:
        _fsync_file(p)
    except OSError:      # some file systems cannot fsync a directory
        pass


def _arrow_type(t: Type):
    import pyarrow as pa
    return {INT: pa.int64(), FLOAT: pa.float64(), DATE: pa.date32(), STRING: pa.string(),
            BOOL: pa.bool_()}[t]


def _to_arrow(layout: TableLayout, entries: dict):
    import pyarrow as pa
    keys = list(entries)
    cols, names = [], []
    for j, t in enumerate(layout.key_types):
        vals = [k[j] for k in keys]
        if t == DATE:
            vals = [_int_to_date(v) for v in vals]
        cols.append(pa.array(vals, type=_arrow_type(t)))
        names.append(f"key_{j}")
    values = [entries[k] for k in keys]
    try:
        cols.append(pa.array(values, type=_arrow_type(layout.value_type)))
    except (OverflowError, pa.ArrowInvalid) as e:
        raise CheckpointError(f"map {layout.name}: a value cannot be stored as a 64-bit "
                              f"{layout.value_type.value} ({e})") from None
    names.append("value")
    return pa.table(cols, names=names)


def _int_to_date(v: int) -> datetime.date:
    return datetime.date(v // 10000, v // 100 % 100, v % 100)


def _date_to_int(d: datetime.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


# ------------------------------------------------------------------ reading
def read_manifest(path) -> dict:
    path = os.fspath(path)
    mpath = os.path.join(path, MANIFEST)
    if not os.path.isdir(path):
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        with open(mpath, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"{path} is not a complete checkpoint (no {MANIFEST})") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{mpath}: unreadable manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{mpath}: not a toaster checkpoint manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {version}; this toaster reads "
                              f"version {FORMAT_VERSION}")
    return manifest


def read_checkpoint(path) -> Checkpoint:
    """Read and decode a whole checkpoint (nothing is restored yet: callers check it first)."""
    import pyarrow.parquet as pq
    manifest = read_manifest(path)
    layouts, tables = [], {}
    for entry in manifest["tables"]:
        layout = TableLayout.from_json(entry)
        fpath = os.path.join(os.fspath(path), entry["file"])
        try:
            table = pq.read_table(fpath)
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{fpath}: unreadable table of map {layout.name} ({e})") from None
        if table.num_rows != entry["rows"] or table.num_columns != len(layout.key_types) + 1:
            raise CheckpointError(f"{fpath}: table of {layout.name} does not match the manifest")
        layouts.append(layout)
        tables[layout.name] = _from_arrow(layout, table)
    return Checkpoint(os.fspath(path), manifest, tuple(layouts), tables)


def _from_arrow(layout: TableLayout, table) -> dict:
    cols = [table.column(j).to_pylist() for j in range(table.num_columns)]
    for j, t in enumerate(layout.key_types):
        if t == DATE:
            cols[j] = [_date_to_int(d) for d in cols[j]]
    values = cols[-1]
    return {tuple(c[i] for c in cols[:-1]): values[i] for i in range(table.num_rows)}


def latest_checkpoint(directory) -> str | None:
    """The newest complete `ckpt-<N>` checkpoint in `directory` (highest N with a readable
    manifest), or None. Temporary (torn) directories are ignored."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return None
    found = []
    for name in os.listdir(directory):
        m = _CHECKPOINT_NAME.match(name)
        if m:
            found.append((int(m.group(1)), name))
    for _, name in sorted(found, reverse=True):
        path = os.path.join(directory, name)
        try:
            read_manifest(path)
        except CheckpointError:
            continue
        return path
    return None


def checkpoint_name(sequence: int) -> str:
    return f"{CHECKPOINT_PREFIX}{sequence:09d}"


def prune_checkpoints(directory, keep: int = 2) -> None:
    """Remove all but the newest `keep` complete checkpoints and any leftover temporary
    directories of a --checkpoint-dir."""
    directory = os.fspath(directory)
    names = sorted((int(m.group(1)), n) for n in os.listdir(directory)
                   if (m := _CHECKPOINT_NAME.match(n)))
    for _, n in names[:-keep] if keep else names:
        shutil.rmtree(os.path.join(directory, n), ignore_errors=True)
    for n in os.listdir(directory):
        if n.startswith(f".{CHECKPOINT_PREFIX}") and ".tmp-" in n:
            shutil.rmtree(os.path.join(directory, n), ignore_errors=True)


# ------------------------------------------------------------------ input position (CLI --run)
class InputPosition:
    """How much of the input the engine has applied: batches in feed order (tables first),
    and per relation the batches and rows (data lines) taken from its source file. Resuming
    skips exactly this prefix of the same feed, so nothing is lost or applied twice."""

    def __init__(self, batch_size: int | None, files: dict):
        self.batch_size = batch_size
        self.files = files                      # relation -> source path (for the record)
        self.batches = 0
        self.per_relation: dict = {}            # relation -> [batches, rows]

    def advance(self, batch) -> None:
        self.batches += 1
        counts = self.per_relation.setdefault(batch.relation.upper(), [0, 0])
        counts[0] += 1
        counts[1] += len(batch)

    def to_json(self) -> dict:
        return {"batches": self.batches, "batch_size": self.batch_size,
                "sources": [{"relation": r, "file": self.files.get(r), "batches": b, "rows": n}
                            for r, (b, n) in sorted(self.per_relation.items())]}

    def skip(self, steps, stored: dict | None):
        """Advance over the prefix of `steps` (an iterable of lists of batches, each applied as
        one step; read lazily) that the stored position says was applied and return the rest (an
        iterator of steps; a step the checkpoint ends inside, as one written by a version that
        applied a window's batches one by one, goes on with its remaining batches); refuse if
        the input or the batch size is not what it was."""
        steps = iter(steps)
        if not stored:
            return steps
        try:
            done, size = int(stored["batches"]), stored.get("batch_size")
            sources = {s["relation"]: (int(s["batches"]), int(s["rows"])) for s in stored["sources"]}
        except (KeyError, TypeError, ValueError):
            raise CheckpointError("the checkpoint's input position is malformed") from None
        if size != self.batch_size:
            raise CheckpointError(f"the checkpoint was written with --batch-size {size or 'unset'}; "
                                  f"resume with the same batch size, not {self.batch_size or 'unset'}")
        rest = []
        while self.batches < done:
            step = next(steps, None)
            if step is None:
                break
            taken = step[:done - self.batches]
            for b in taken:
                self.advance(b)
            rest = step[len(taken):]
        if self.batches < done:
            raise CheckpointError(f"the checkpoint consumed {done} batches but the input has only "
                                  f"{self.batches} (the input files changed?)")
        mine = {r: tuple(c) for r, c in self.per_relation.items()}
        if mine != sources:
            for r in sorted(set(mine) | set(sources)):
                if mine.get(r) != sources.get(r):
                    b0, n0 = sources.get(r, (0, 0))
                    b1, n1 = mine.get(r, (0, 0))
                    raise CheckpointError(
                        f"the input differs from the checkpoint's: relation {r} had {n0} rows in "
                        f"{b0} batches when it was written, the same prefix now has {n1} rows in {b1}")
        return itertools.chain([rest], steps) if rest else steps
