"""TPC-H update streams (VLDBJ'14 §8): dbgen tables turned into an insert/delete stream.

    info = generate_tpch_stream(out_dir, scale=0.01, seed=1)      # -> StreamInfo (cached on disk)

The base tables come from `tpchgen-cli` (a faithful dbgen port; offline, pip-installable). The
stream randomly interleaves the inserts of every dynamic relation (CUSTOMER, PART, SUPPLIER,
PARTSUPP, ORDERS, LINEITEM) and keeps referential integrity: a tuple whose parents (customer
of an order, order and part-supplier of a line item, part and supplier of a part-supplier) are
not yet in the stream pulls them forward, so every foreign key points at a present tuple at
every point of the stream. Once ORDERS and LINEITEM reach their active sizes (30,000 and
120,000 at scale 0.1, linear in the scale factor), each further insert into them is followed by
the deletion of a random present tuple of the same relation, which keeps them at that size.
Deleting an order first deletes its present line items (foreign keys again); the victim is drawn
among orders whose line items have all arrived, so no later line item refers to a deleted
order (if a few draws find none, the order's missing line items are dropped from the stream).
NATION and REGION are static TABLEs (plain CSV).

Files written to out_dir: one `<relation>.csv` per stream in the CSV adaptor's deletions format
`seq|op|col1|...` (seq is the global event number, shared by all files, so the harness can merge
them back into one ordered stream; op 1 = insert, 0 = delete), `nation.csv`, `region.csv`,
`schema.sql` (CREATE STREAM/TABLE with FROM FILE sources) and `manifest.json`.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass, asdict

import numpy as np

from toaster.errors import ToasterError

# Column declarations from the TPC-H specification (decimals are floats, as in DBToaster).
TPCH_SCHEMA = {
    "LINEITEM": "L_ORDERKEY int, L_PARTKEY int, L_SUPPKEY int, L_LINENUMBER int, L_QUANTITY float, "
                "L_EXTENDEDPRICE float, L_DISCOUNT float, L_TAX float, L_RETURNFLAG string, "
                "L_LINESTATUS string, L_SHIPDATE date, L_COMMITDATE date, L_RECEIPTDATE date, "
                "L_SHIPINSTRUCT string, L_SHIPMODE string, L_COMMENT string",
    "ORDERS": "O_ORDERKEY int, O_CUSTKEY int, O_ORDERSTATUS string, O_TOTALPRICE float, O_ORDERDATE date, "
              "O_ORDERPRIORITY string, O_CLERK string, O_SHIPPRIORITY int, O_COMMENT string",
    "CUSTOMER": "C_CUSTKEY int, C_NAME string, C_ADDRESS string, C_NATIONKEY int, C_PHONE string, "
                "C_ACCTBAL float, C_MKTSEGMENT string, C_COMMENT string",
    "PART": "P_PARTKEY int, P_NAME string, P_MFGR string, P_BRAND string, P_TYPE string, P_SIZE int, "
            "P_CONTAINER string, P_RETAILPRICE float, P_COMMENT string",
    "PARTSUPP": "PS_PARTKEY int, PS_SUPPKEY int, PS_AVAILQTY int, PS_SUPPLYCOST float, PS_COMMENT string",
    "SUPPLIER": "S_SUPPKEY int, S_NAME string, S_ADDRESS string, S_NATIONKEY int, S_PHONE string, "
                "S_ACCTBAL float, S_COMMENT string",
    "NATION": "N_NATIONKEY int, N_NAME string, N_REGIONKEY int, N_COMMENT string",
    "REGION": "R_REGIONKEY int, R_NAME string, R_COMMENT string",
}
STREAMS = ("CUSTOMER", "PART", "SUPPLIER", "PARTSUPP", "ORDERS", "LINEITEM")
TABLES = ("NATION", "REGION")

ACTIVE_ORDERS_PER_SF = 300_000      # 30,000 at SF 0.1
ACTIVE_LINEITEMS_PER_SF = 1_200_000  # 120,000 at SF 0.1
FORMAT_VERSION = 1


@dataclass
class StreamInfo:
    """What a generated stream directory holds (also its manifest.json)."""
    kind: str
    directory: str
    params: dict
    counts: dict          # relation -> {"inserts": n, "deletes": n, "final": n}
    events: int           # stream events (tables excluded)

    @property
    def schema_path(self) -> str:
        return os.path.join(self.directory, "schema.sql")

    def schema_sql(self) -> str:
        with open(self.schema_path) as f:
            return f.read()


def default_active_sizes(scale: float) -> tuple[int, int]:
    return max(1, round(ACTIVE_ORDERS_PER_SF * scale)), max(1, round(ACTIVE_LINEITEMS_PER_SF * scale))


def _scale_text(scale: float) -> str:
    return f"{scale:g}"


def find_tpchgen() -> str:
    exe = shutil.which("tpchgen-cli")
    if exe is None:
        cand = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
        if os.path.exists(cand):
            exe = cand
    if exe is None:
        raise ToasterError("tpchgen-cli is not installed; install the bench extra: pip install -e '.[bench]'")
    return exe


def generate_tables(tbl_dir: str, scale: float) -> str:
    """dbgen's .tbl files for a scale factor (cached in tbl_dir)."""
    done = os.path.join(tbl_dir, ".complete")
    if os.path.exists(done):
        return tbl_dir
    os.makedirs(tbl_dir, exist_ok=True)
    cmd = [find_tpchgen(), "-s", _scale_text(scale), "-o", tbl_dir, "--overwrite", "-q", "-n", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise ToasterError(f"tpchgen-cli failed ({' '.join(cmd)}): {r.stderr.strip()[:500]}")
    open(done, "w").close()
    return tbl_dir


def _read_tbl(path: str) -> list[str]:
    """Lines of a .tbl file without the trailing '|' and newline."""
    with open(path, encoding="utf-8") as f:
        return [ln[:-2] if ln.endswith("|\n") else ln.rstrip("\n").rstrip("|") for ln in f]


class _Pool:
    """A set with O(1) insert, delete and uniformly random choice (deterministic by rng)."""

    def __init__(self):
        self.items: list = []
        self.pos: dict = {}

    def add(self, x) -> None:
        self.pos[x] = len(self.items)
        self.items.append(x)

    def remove(self, x) -> None:
        i = self.pos.pop(x)
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self.pos[last] = i

    def choice(self, rng: random.Random):
        return self.items[int(rng.random() * len(self.items))]

    def __len__(self) -> int:
        return len(self.items)


def build_tpch_events(tables: dict[str, list[str]], seed: int, active_orders: int,
                      active_lineitems: int) -> list[tuple[str, int, int]]:
    """The stream as (relation, op, row index) events; op 1 = insert, 0 = delete.

    `tables` maps each stream relation to its rows as .tbl text (only key fields are read).
    """
    rng = random.Random(seed)
    ords = tables["ORDERS"]
    lis = tables["LINEITEM"]
    ps = tables["PARTSUPP"]
    order_idx = {}
    order_cust = []
    for i, ln in enumerate(ords):
        k, c = ln.split("|", 2)[:2]
        order_idx[int(k)] = i
        order_cust.append(int(c))
    cust_idx = {int(ln.split("|", 1)[0]): i for i, ln in enumerate(tables["CUSTOMER"])}
    part_idx = {int(ln.split("|", 1)[0]): i for i, ln in enumerate(tables["PART"])}
    supp_idx = {int(ln.split("|", 1)[0]): i for i, ln in enumerate(tables["SUPPLIER"])}
    ps_idx = {}
    ps_parents = []
    for i, ln in enumerate(ps):
        p, s = ln.split("|", 2)[:2]
        p, s = int(p), int(s)
        ps_idx[(p, s)] = i
        ps_parents.append((part_idx[p], supp_idx[s]))
    li_order = []
    li_ps = []
    lines_of_order = [[] for _ in ords]
    for i, ln in enumerate(lis):
        o, p, s = ln.split("|", 3)[:3]
        oi = order_idx[int(o)]
        li_order.append(oi)
        li_ps.append(ps_idx[(int(p), int(s))])
        lines_of_order[oi].append(i)

    emitted = {r: bytearray(len(tables[r])) for r in STREAMS}   # 1 = inserted (or dropped)
    pending_lines = [len(x) for x in lines_of_order]             # line items not yet inserted
    live_orders, live_lines = _Pool(), _Pool()
    live_lines_of_order: dict[int, set] = {}
    events: list[tuple[str, int, int]] = []
    emit = events.append

    def insert_customer(i):
        if not emitted["CUSTOMER"][i]:
            emitted["CUSTOMER"][i] = 1
            emit(("CUSTOMER", 1, i))

    def insert_part(i):
        if not emitted["PART"][i]:
            emitted["PART"][i] = 1
            emit(("PART", 1, i))

    def insert_supplier(i):
        if not emitted["SUPPLIER"][i]:
            emitted["SUPPLIER"][i] = 1
            emit(("SUPPLIER", 1, i))

    def insert_partsupp(i):
        if not emitted["PARTSUPP"][i]:
            p, s = ps_parents[i]
            insert_part(p)
            insert_supplier(s)
            emitted["PARTSUPP"][i] = 1
            emit(("PARTSUPP", 1, i))

    def delete_order(victim):
        for li in sorted(live_lines_of_order.pop(victim, ())):
            live_lines.remove(li)
            emit(("LINEITEM", 0, li))
        for li in lines_of_order[victim]:          # never inserted later: drop them
            if not emitted["LINEITEM"][li]:
                emitted["LINEITEM"][li] = 1
        pending_lines[victim] = 0
        live_orders.remove(victim)
        emit(("ORDERS", 0, victim))

    def insert_order(i):
        if emitted["ORDERS"][i]:
            return
        insert_customer(cust_idx[order_cust[i]])
        emitted["ORDERS"][i] = 1
        emit(("ORDERS", 1, i))
        live_orders.add(i)
        if len(live_orders) > active_orders:
            victim = None
            for _ in range(8):
                cand = live_orders.choice(rng)
                if cand != i and pending_lines[cand] == 0:
                    victim = cand
                    break
            if victim is None:
                victim = live_orders.choice(rng)
                while victim == i:
                    victim = live_orders.choice(rng)
            delete_order(victim)

    def insert_lineitem(i):
        if emitted["LINEITEM"][i]:
            return
        oi = li_order[i]
        insert_order(oi)
        if emitted["LINEITEM"][i]:      # its order was just evicted: the line item is dropped
            return
        insert_partsupp(li_ps[i])
        emitted["LINEITEM"][i] = 1
        pending_lines[oi] -= 1
        emit(("LINEITEM", 1, i))
        live_lines.add(i)
        live_lines_of_order.setdefault(oi, set()).add(i)
        if len(live_lines) > active_lineitems:
            victim = live_lines.choice(rng)
            while victim == i:
                victim = live_lines.choice(rng)
            live_lines.remove(victim)
            live_lines_of_order[li_order[victim]].discard(victim)
            emit(("LINEITEM", 0, victim))

    inserters = {"CUSTOMER": insert_customer, "PART": insert_part, "SUPPLIER": insert_supplier,
                 "PARTSUPP": insert_partsupp, "ORDERS": insert_order, "LINEITEM": insert_lineitem}
    # a uniformly random interleaving of every relation's inserts, in file order per relation
    slots = np.repeat(np.arange(len(STREAMS), dtype=np.int8), [len(tables[r]) for r in STREAMS])
    np.random.default_rng(seed).shuffle(slots)
    nxt = [0] * len(STREAMS)
    for r in slots.tolist():
        i = nxt[r]
        nxt[r] = i + 1
        inserters[STREAMS[r]](i)
    return events


def generate_tpch_stream(out_dir: str, scale: float = 0.01, seed: int = 1, active_orders: int | None = None,
                         active_lineitems: int | None = None, tbl_dir: str | None = None,
                         force: bool = False) -> StreamInfo:
    """Write the TPC-H stream for these parameters into out_dir (reused if already there)."""
    d_orders, d_lines = default_active_sizes(scale)
    active_orders = d_orders if active_orders is None else active_orders
    active_lineitems = d_lines if active_lineitems is None else active_lineitems
    params = {"scale": scale, "seed": seed, "active_orders": active_orders,
              "active_lineitems": active_lineitems, "format": FORMAT_VERSION}
    manifest = os.path.join(out_dir, "manifest.json")
    if not force and os.path.exists(manifest):
        with open(manifest) as f:
            m = json.load(f)
        if m.get("params") == params:
            return StreamInfo(**m)
    tbl_dir = tbl_dir or os.path.join(os.path.dirname(os.path.abspath(out_dir)), f"tbl-sf{_scale_text(scale)}")
    generate_tables(tbl_dir, scale)
    tables = {r: _read_tbl(os.path.join(tbl_dir, r.lower() + ".tbl")) for r in STREAMS + TABLES}
    events = build_tpch_events(tables, seed, active_orders, active_lineitems)

    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    files = {r: open(os.path.join(out_dir, r.lower() + ".csv"), "w", encoding="utf-8") for r in STREAMS}
    try:
        buf = {r: [] for r in STREAMS}
        for seq, (rel, op, i) in enumerate(events, start=1):
            buf[rel].append(f"{seq}|{op}|{tables[rel][i]}\n")
        for r in STREAMS:
            files[r].writelines(buf[r])
            ins = sum(1 for rel, op, _ in events if rel == r and op == 1)
            dels = sum(1 for rel, op, _ in events if rel == r and op == 0)
            counts[r] = {"inserts": ins, "deletes": dels, "final": ins - dels}
    finally:
        for f in files.values():
            f.close()
    for r in TABLES:
        with open(os.path.join(out_dir, r.lower() + ".csv"), "w", encoding="utf-8") as f:
            f.writelines(ln + "\n" for ln in tables[r])
        counts[r] = {"inserts": len(tables[r]), "deletes": 0, "final": len(tables[r])}
    with open(os.path.join(out_dir, "schema.sql"), "w") as f:
        f.write(tpch_schema_sql(out_dir))
    info = StreamInfo("tpch", os.path.abspath(out_dir), params, counts, len(events))
    with open(manifest, "w") as f:
        json.dump(asdict(info), f, indent=1)
    return info


def tpch_schema_sql(data_dir: str) -> str:
    """CREATE STREAM/TABLE declarations reading the stream files in data_dir."""
    data_dir = os.path.abspath(data_dir)
    out = [f"-- TPC-H streams generated by bench.tpch into {data_dir}"]
    for r in STREAMS + TABLES:
        path = os.path.join(data_dir, r.lower() + ".csv")
        kind = "STREAM" if r in STREAMS else "TABLE"
        dels = ", deletions := 'true'" if r in STREAMS else ""
        out.append(f"CREATE {kind} {r}({TPCH_SCHEMA[r]})\n  FROM FILE '{path}' LINE DELIMITED "
                   f"CSV (delimiter := '|'{dels});")
    return "\n".join(out) + "\n"
