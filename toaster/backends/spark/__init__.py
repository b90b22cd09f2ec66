"""Distributed branch: distributed M3 (location tags, transformers, blocks) and PySpark codegen.

Importing this package registers the passes m3_to_dist, dist_simplify, dist_blocks and
dist_to_spark. pyspark itself is imported only by the runtime / engine / session modules.
"""
from toaster.dist import placement, simplify, blocks  # noqa: F401  (register the dist passes)
from toaster.backends.spark import codegen  # noqa: F401  (registers dist_to_spark)
from toaster.dist.printer import print_dist, print_dist_expr
from toaster.backends.spark.codegen import SparkProgram

__all__ = ["print_dist", "print_dist_expr", "SparkProgram"]
