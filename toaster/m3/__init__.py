"""The M3 stage: the higher-order IVM compiler (calculus -> M3 trigger programs), the M3 IR,
its printer and parser, the materialization plan and `--explain`."""
