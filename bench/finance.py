"""Synthetic order-book logs for the finance queries (the orderbook adaptor's input format).

    info = generate_finance_stream(out_dir, events=100_000, seed=1, brokers=10)

Writes `orderbook.csv` with lines `t,id,action,volume,price` (DIALECT.md §2.3) and
`schema.sql` declaring BIDS and ASKS over it (orderbook adaptor, deterministic brokers:
broker = id mod brokers). The log is a simple limit-order-book simulation:

* the mid price follows a geometric random walk (per-event volatility `volatility`), rounded
  to cents; new bids are placed below the mid and asks above it, at an exponentially
  distributed distance (mean `spread` of the mid), so both books have a realistic depth profile;
* actions: B (new bid), S (new ask), D (cancel), E (partial fill of a random resting order;
  a fill of the whole remaining volume is written as F), and rare T (trade print, ignored by
  the adaptor); the book size is kept near `book_size` orders per side by raising the cancel
  rate as it grows;
* timestamps increase by exponential inter-arrival times; volumes are lots of 100 shares.

Deterministic by seed.
"""
from __future__ import annotations

import json
import math
import os
import random
from dataclasses import asdict

from bench.tpch import StreamInfo

FORMAT_VERSION = 1


def build_orderbook_log(events: int, seed: int = 1, book_size: int = 2000, start_price: float = 100.0,
                        volatility: float = 0.0005, spread: float = 0.002) -> list[str]:
    """The log lines (without newlines)."""
    rng = random.Random(seed)
    mid = start_price
    t = 34200.0                                    # 09:30 in seconds after midnight
    next_id = 1
    live = {"B": [], "S": []}                      # resting order ids per side
    where: dict[int, tuple[str, int]] = {}         # id -> (side, index in live[side])
    volume: dict[int, int] = {}
    out: list[str] = []

    def remove(oid: int) -> None:
        side, i = where.pop(oid)
        ids = live[side]
        last = ids.pop()
        if i < len(ids):
            ids[i] = last
            where[last] = (side, i)
        volume.pop(oid)

    for _ in range(events):
        t += rng.expovariate(50.0)                 # ~50 events per second
        mid = max(0.01, mid * math.exp(rng.gauss(0.0, volatility)))
        n_live = len(where)
        fill = n_live / (2 * book_size)            # the fuller the book, the more cancels/fills
        u = rng.random()
        if n_live == 0 or u > 0.2 + 0.5 * fill:
            if rng.random() < 0.01:
                out.append(f"{t:.3f},{next_id},T,{100 * rng.randint(1, 10)},{mid:.2f}")
                next_id += 1
                continue
            side = "B" if rng.random() < 0.5 else "S"
            dist = mid * rng.expovariate(1.0 / spread)
            price = mid - dist if side == "B" else mid + dist
            vol = 100 * rng.randint(1, 20)
            oid = next_id
            next_id += 1
            live[side].append(oid)
            where[oid] = (side, len(live[side]) - 1)
            volume[oid] = vol
            out.append(f"{t:.3f},{oid},{side},{vol},{max(price, 0.01):.2f}")
        else:
            side = "B" if (not live["S"] or (live["B"] and rng.random() < 0.5)) else "S"
            ids = live[side]
            oid = ids[int(rng.random() * len(ids))]
            if rng.random() < 0.7:
                out.append(f"{t:.3f},{oid},D,{volume[oid]},{mid:.2f}")
                remove(oid)
            else:
                take = 100 * rng.randint(1, 10)
                if take >= volume[oid]:
                    out.append(f"{t:.3f},{oid},F,{volume[oid]},{mid:.2f}")
                    remove(oid)
                else:
                    volume[oid] -= take
                    out.append(f"{t:.3f},{oid},E,{take},{mid:.2f}")
    return out


def finance_schema_sql(data_dir: str, brokers: int) -> str:
    path = os.path.join(os.path.abspath(data_dir), "orderbook.csv")
    cols = "T float, ID int, BROKER_ID int, VOLUME float, PRICE float"
    return "".join(
        f"CREATE STREAM {name}({cols})\n  FROM FILE '{path}' LINE DELIMITED\n"
        f"  orderbook (book := '{book}', brokers := '{brokers}', deterministic := 'yes');\n"
        for name, book in (("BIDS", "bids"), ("ASKS", "asks")))


def generate_finance_stream(out_dir: str, events: int = 100_000, seed: int = 1, brokers: int = 10,
                            book_size: int = 2000, force: bool = False) -> StreamInfo:
    """Write the order-book log and its schema into out_dir (reused if already there)."""
    params = {"events": events, "seed": seed, "brokers": brokers, "book_size": book_size,
              "format": FORMAT_VERSION}
    manifest = os.path.join(out_dir, "manifest.json")
    if not force and os.path.exists(manifest):
        with open(manifest) as f:
            m = json.load(f)
        if m.get("params") == params:
            return StreamInfo(**m)
    os.makedirs(out_dir, exist_ok=True)
    lines = build_orderbook_log(events, seed, book_size)
    with open(os.path.join(out_dir, "orderbook.csv"), "w") as f:
        f.writelines(ln + "\n" for ln in lines)
    with open(os.path.join(out_dir, "schema.sql"), "w") as f:
        f.write(f"-- synthetic order book generated by bench.finance into {os.path.abspath(out_dir)}\n")
        f.write(finance_schema_sql(out_dir, brokers))
    actions: dict[str, int] = {}
    for ln in lines:
        a = ln.split(",", 3)[2]
        actions[a] = actions.get(a, 0) + 1
    info = StreamInfo("finance", os.path.abspath(out_dir), params, {"ORDERBOOK": actions}, len(lines))
    with open(manifest, "w") as f:
        json.dump(asdict(info), f, indent=1)
    return info
