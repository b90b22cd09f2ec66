"""Every query of the suite under every maintenance strategy: the interp engine equals DuckDB
after every batch, with single-tuple triggers and with batch triggers over batches of 1 and of up
to 10 and 1000 rows (issue 4). Every query compiles under every strategy."""
from __future__ import annotations

from pathlib import Path

import pytest

from toaster.pipeline import compile_sql
from toaster.testing import check_compilation, merge_batches, split_batches

from test_query_suite import REPO, _id, _query_files, compiled, suite_stream

SUITE = _query_files("features") + _query_files("tpch") + _query_files("finance")
RUNS = {
    "hoivm": (("tuple", 1), ("batch", 1), ("batch", 10), ("batch", 1000)),
    "ivm": (("batch", 10),),
    "rep": (("batch", 10),),
    "naive": (("tuple", 1),),
}


@pytest.mark.parametrize("strategy", list(RUNS))
@pytest.mark.parametrize("path", SUITE, ids=_id)
def test_strategy_maintains_the_suite_query(path: Path, strategy: str):
    reference = compiled(path, "tuple") if _compiles(path) else None
    for mode, size in RUNS[strategy]:
        comp = compile_sql(path.read_text(), mode=mode, strategy=strategy,
                           source_file=str(path.relative_to(REPO)), base_dir=str(REPO))
        stream = suite_stream(path, reference, list(comp.m3.relations))
        batches = split_batches(stream, 1) if size == 1 else merge_batches(stream, size)
        check_compilation(comp, "interp", batches, mode=mode)


def _compiles(path: Path) -> bool:
    try:
        compiled(path, "tuple")
        return True
    except Exception:
        return False
