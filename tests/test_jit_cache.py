"""`--run --backend llvm` keeps the JIT's machine code in a cache directory (--jit-cache,
$TOASTER_JIT_CACHE): a second run loads it and prints the same views; 'off' compiles every time;
only a directory of this user's that others cannot write is used; old objects are pruned."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toaster import cli_run as cli
from toaster.errors import UsageError
from toaster.pipeline import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "rst.sql")


def _run(capsys, *flags, cached=False):
    assert main([EXAMPLE, "--run", "--backend", "llvm", "--output", "json", *flags]) == 0
    out = capsys.readouterr()
    assert ("machine code from the JIT cache" in out.err) == cached
    return json.loads(out.out)


def test_a_second_run_loads_the_cached_code_and_prints_the_same_views(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    cache = tmp_path / "jit"
    off = _run(capsys, "--jit-cache", "off")
    first = _run(capsys, "--jit-cache", str(cache))
    objects = sorted(os.listdir(cache))
    assert len(objects) == 1 and objects[0].endswith(".o")
    second = _run(capsys, "--jit-cache", str(cache), cached=True)
    assert sorted(os.listdir(cache)) == objects
    assert off == first == second
    # another opt level is another object (this small input runs at 1 by default)
    assert _run(capsys, "--jit-cache", str(cache), "--opt-level", "2") == off
    assert len(os.listdir(cache)) == 2


def test_the_environment_names_the_cache_and_off_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv(cli.JIT_CACHE_ENV, str(tmp_path / "env-cache"))
    assert cli.jit_cache_dir(None) == str(tmp_path / "env-cache")
    assert cli.jit_cache_dir("off") is None
    monkeypatch.setenv(cli.JIT_CACHE_ENV, "off")
    assert cli.jit_cache_dir(None) is None
    monkeypatch.delenv(cli.JIT_CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cli.jit_cache_dir(None) == str(tmp_path / "xdg" / "toaster" / "jit")


def test_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UsageError, match="not be writable by others"):
        cli.jit_cache_dir(str(shared))


def test_jit_cache_needs_the_llvm_backend(capsys):
    assert main([EXAMPLE, "--run", "--backend", "interp", "--jit-cache", "off"]) == 2
    assert "--jit-cache applies to --backend llvm only" in capsys.readouterr().err


def test_the_oldest_objects_beyond_the_limit_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "JIT_CACHE_KEEP", 3)
    for i in range(5):
        p = tmp_path / f"{i}.o"
        p.write_bytes(b"x")
        os.utime(p, (1000 + i, 1000 + i))
    (tmp_path / "note.txt").write_text("kept")
    assert cli.jit_cache_dir(str(tmp_path)) == str(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["2.o", "3.o", "4.o", "note.txt"]


def test_run_opt_level_is_o2_only_for_large_inputs(tmp_path, monkeypatch):
    """`--run` without --opt-level compiles at 1 unless the files it reads reach RUN_O2_BYTES;
    a relation the program does not read does not count."""
    from toaster.backends import get_backend
    from toaster.backends.llvm import jit
    from toaster.pipeline import compile_file
    for name, rows in (("r", "1|2\n" * 50), ("unused", "1\n" * 10_000)):
        (tmp_path / f"{name}.csv").write_text(rows)
    q = tmp_path / "q.sql"
    q.write_text(f"CREATE STREAM R(A int, B int) FROM FILE '{tmp_path}/r.csv' LINE DELIMITED CSV (delimiter := '|');\n"
                 f"CREATE STREAM U(X int) FROM FILE '{tmp_path}/unused.csv' LINE DELIMITED CSV (delimiter := '|');\n"
                 "SELECT SUM(A) FROM R;\n")
    b = get_backend("llvm")
    reads = b.reads(compile_file(str(q)).stage(b.stage, b.branch))
    assert jit.run_opt_level(reads, None) == 1
    monkeypatch.setattr(jit, "RUN_O2_BYTES", os.path.getsize(tmp_path / "r.csv"))
    assert jit.run_opt_level(reads, None) == 2
    monkeypatch.setattr(jit, "RUN_O2_BYTES", os.path.getsize(tmp_path / "r.csv") + 1)
    assert jit.run_opt_level(reads, None) == 1       # U's larger file is not read
