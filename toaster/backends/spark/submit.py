"""`spark-submit` entry of a generated program (`if __name__ == '__main__': run_main(Program)`)."""
from __future__ import annotations

import csv
import sys


_PARSE = {"int": int, "date": lambda s: int(s.replace("-", "")), "float": float, "string": str,
          "bool": lambda s: s.strip().lower() in ("1", "true", "t")}


def run_main(program_cls, argv=None) -> None:
    """`spark-submit prog.py [--checkpoint-dir DIR] REL=file.csv ...`: each file is one batch of
    inserts (a leading column of +1/-1 signs when the file has one column more than the relation)."""
    from toaster.backends.spark.session import get_spark
    argv = list(sys.argv[1:] if argv is None else argv)
    ckpt = None
    if argv[:1] == ["--checkpoint-dir"]:
        ckpt, argv = argv[1], argv[2:]
    prog = program_cls(get_spark().sparkContext, checkpoint_dir=ckpt)
    for arg in argv:
        rel, _, path = arg.partition("=")
        rel = rel.upper()
        types = program_cls.RELATION_TYPES[rel]
        delta = {}
        with open(path, newline="") as f:
            for row in csv.reader(f):
                sign = 1
                if len(row) == len(types) + 1:
                    sign, row = int(row[0]), row[1:]
                key = tuple(_PARSE[t](v) for t, v in zip(types, row))
                delta[key] = delta.get(key, 0) + sign
        prog.apply_delta(rel, {k: v for k, v in delta.items() if v != 0})
    for name in program_cls.LOCAL_MAPS + tuple(program_cls.DIST_MAPS):
        print(name, sorted(prog.read_map(name).items()))
