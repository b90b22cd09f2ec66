"""Distributed branch: distributed M3 (location tags, transformers, blocks) and PySpark codegen.

Importing this package registers the passes m3_to_dist, dist_simplify, dist_blocks and
dist_to_spark. pyspark itself is imported only by the runtime / engine / session modules.
"""
from toaster.backends.spark import placement, simplify, blocks, codegen  # noqa: F401  (register passes)
from toaster.backends.spark.printer import print_dist, print_dist_expr
from toaster.backends.spark.codegen import SparkProgram

__all__ = ["print_dist", "print_dist_expr", "SparkProgram"]
