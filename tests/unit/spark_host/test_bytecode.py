"""Bytecode added to a worker zip is what Python imports, and the source stays the fallback."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from streamsift.spark_host.bytecode import add_bytecode, has_bytecode


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def _import_from(archive: Path, module: str) -> str:
    code = f"import {module} as m; print(m.__file__, m.VALUE)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(archive)},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_modules_import_from_the_added_bytecode(tmp_path):
    archive = _zip(
        tmp_path / "lib.zip",
        {"pkg/__init__.py": "VALUE = 1\n", "pkg/mod.py": "VALUE = 'from mod'\n"},
    )
    assert not has_bytecode(archive)
    assert add_bytecode(archive) == 2
    assert has_bytecode(archive)
    assert _import_from(archive, "pkg.mod").endswith("pkg/mod.pyc from mod")
    with zipfile.ZipFile(archive) as zf:  # the sources stay, for tracebacks and other Pythons
        assert {"pkg/__init__.py", "pkg/mod.py", "pkg/__init__.pyc", "pkg/mod.pyc"} <= set(
            zf.namelist()
        )


def test_bytecode_of_another_python_falls_back_to_the_source(tmp_path):
    archive = _zip(tmp_path / "lib.zip", {"solo.py": "VALUE = 'source'\n"})
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr("solo.pyc", b"\x00\x00\r\n" + bytes(12) + b"not code")  # wrong magic
    assert _import_from(archive, "solo").endswith("solo.py source")


def test_a_module_that_does_not_compile_is_left_to_its_source(tmp_path):
    archive = _zip(tmp_path / "lib.zip", {"ok.py": "VALUE = 2\n", "broken.py": "def (:\n"})
    assert add_bytecode(archive) == 1
    with zipfile.ZipFile(archive) as zf:
        assert "broken.pyc" not in zf.namelist()
