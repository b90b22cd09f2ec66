"""LLVM backend: imperative IR -> LLVM IR (llvmlite) -> JIT, with native hash maps.

`LLVMEngine` is loaded lazily so importing the package (e.g. to register the `imp_to_llvm`
pass) does not initialize LLVM.
"""
from toaster.backends.llvm.codegen import LLVMModule, generate_llvm, imp_to_llvm  # noqa: F401  (registers the pass)


def __getattr__(name):
    if name == "LLVMEngine":
        from toaster.backends.llvm.engine import LLVMEngine
        return LLVMEngine
    raise AttributeError(name)


__all__ = ["LLVMEngine", "LLVMModule", "generate_llvm", "imp_to_llvm"]
