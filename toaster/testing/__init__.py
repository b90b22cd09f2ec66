"""Differential-testing toolkit shared by the test suite and bench/.

  generator   random_stream(relations, seed=..., deletes=...) -> [Batch]  (seeded, small domains)
  strategies  hypothesis strategies: rows, databases, database_batches, update_streams
  oracle      Oracle (DuckDB over the current multisets), compare_results, Difference
  differential run_differential(sql_text, backend, batches, mode=..., check_every=...),
               check_compilation(compilation, backend, batches, ...)
"""
from toaster.testing.generator import random_stream, split_batches, merge_batches, DEFAULT_DOMAINS
from toaster.testing.oracle import Oracle, compare_results, Difference, values_equal
from toaster.testing.differential import run_differential, check_compilation, DifferentialReport

__all__ = ["random_stream", "split_batches", "merge_batches", "DEFAULT_DOMAINS", "Oracle",
           "compare_results", "Difference", "values_equal", "run_differential", "check_compilation",
           "DifferentialReport"]
