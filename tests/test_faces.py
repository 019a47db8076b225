"""The public surface: the lazy package faces, busca.errors and `import busca` are visible
to type checkers (their .pyi stubs name exactly what they load on first use).

The stubs are written from each face's EXPORTS: after changing one, run
`python3 tests/test_faces.py` from the repository root.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import busca
from busca import errors

ROOT = Path(busca.__file__).parent
FACES = ("crawler", "index", "search", "search/eval", "serve")


def exports(face: Path) -> dict[str, str]:
    """The EXPORTS dict of a face's __init__.py, read without importing it."""
    for node in ast.parse(face.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EXPORTS":
            return ast.literal_eval(node.value)
    raise ValueError(f"{face} has no EXPORTS")


def stub_line(name: str, where: str) -> str:
    if where.endswith(":"):
        package, _, module = where[:-1].rpartition(".")
        return f"from {package or '.'} import {module} as {name}"
    module, _, attribute = where.partition("#")
    return f"from {module} import {attribute or name} as {name}"


def stub(face: Path) -> str:
    name = "busca." + ".".join(face.parent.relative_to(ROOT).parts)
    lines = [stub_line(n, w) for n, w in sorted(exports(face).items(),
                                                  key=lambda item: item[0].lower())]
    names = "".join(f'\n    "{n}",' for n in sorted(exports(face)))
    return (f'"""Types of the lazy face {name} (busca/lazy.py loads the names on first'
            ' use)."""\n\n' + "\n".join(lines)
            + f"\n\nEXPORTS: dict[str, str]\n__all__ = [{names}\n]\n")


@pytest.mark.parametrize("face", FACES)
def test_each_face_stub_names_exactly_its_exports(face):
    path = ROOT / face / "__init__.py"
    assert path.with_suffix(".pyi").read_text(encoding="utf-8") == stub(path), \
        "run: python3 tests/test_faces.py"


def _all_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages([str(ROOT)], "busca."):
        if not info.name.startswith(("busca.tests", "busca.bench", "busca.fixtures",
                                     "busca.docs", "busca..venv")):
            names.append(info.name)
    return names


def test_busca_errors_reexports_every_error_class():
    for name in _all_modules():
        try:
            importlib.import_module(name)
        except ImportError:  # an optional extra that is not installed
            continue
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    ours = {c for c in subclasses(errors.BuscaError) if c.__module__.startswith("busca.")}
    assert ours and {c.__name__ for c in ours} <= set(errors.WHERE)
    for cls in ours:
        assert getattr(errors, cls.__name__) is cls
    stubbed = {n.names[0].asname for n in ast.parse((ROOT / "errors.pyi").read_text()).body
               if isinstance(n, ast.ImportFrom)}
    assert stubbed == set(errors.WHERE)


def test_the_public_names():
    assert set(busca.__all__) >= {"open", "Corpus", "Document", "Hit", "Result", "Golden",
                                  "errors", "Comparison"}  # what Corpus.compare returns
    for name in busca.__all__:
        assert getattr(busca, name) is not None
    assert busca.Hit.__module__ == "busca.search.hits"


SNIPPET = """\
import busca
from busca import crawler, errors, index, search
from busca.search import eval as evaluation

corpus: busca.Corpus = busca.open("home")
result: busca.Result = corpus.search("pergunta", method="bm25", k=5)
first: busca.Hit = result.hits[0]
url: str = first.url
home: index.Home = index.open_home("home")
k: int = search.K
metric = evaluation.parse_metric("recall@3")
doc: busca.Document = crawler.Document("u", "t", "x")
problem: type[errors.BuscaError] = errors.IndexNotFound
batch: int = index.EMBED_BATCH  # a name the face gives another module's constant
per_doc: int = search.CONTEXT_PER_DOC
reveal_type(search.compare_methods)
reveal_type(busca.open)
reveal_type(index.open_home)
reveal_type(errors.StaleIndex)
"""


def mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    """Plain mypy on `code`, with this checkout importable as `busca` (an editable install's
    import hook is invisible to mypy)."""
    (tmp_path / "src").mkdir(exist_ok=True)
    link = tmp_path / "src" / "busca"
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                           "--no-incremental", "snippet.py"], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path / "src")})


needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (pip install mypy)")


@needs_mypy
def test_mypy_resolves_the_public_surface(tmp_path):
    done = mypy(tmp_path, SNIPPET)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"def (location: str | pathlib.Path' in done.stdout  # busca.open, not Any
    assert "-> busca.corpus.corpus.Corpus" in done.stdout  # corpus/corpus.py (issue 32)
    assert "-> busca.index.backend.Home" in done.stdout
    assert "busca.search.hits.StaleIndex" in done.stdout
    assert "-> busca.search.compare.Comparison" in done.stdout


@needs_mypy
def test_mypy_sees_a_misspelt_name(tmp_path):
    done = mypy(tmp_path, "import busca\nfrom busca import index\n"
                          "busca.opne('home')\nindex.open_hom('home')\n")
    assert done.returncode == 1
    assert 'Module has no attribute "opne"' in done.stdout
    assert 'Module has no attribute "open_hom"' in done.stdout


def error_classes() -> dict[str, str]:
    """Every class deriving from BuscaError in the package (read, not imported) -> its module
    relative to the package, as errors.py's WHERE lists them."""
    classes = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "bench", "fixtures", "docs", ".venv", "build"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
                classes[node.name] = ("." + ".".join(rel.with_suffix("").parts), bases)

    def derives(name: str, seen: tuple = ()) -> bool:
        return name == "BuscaError" or (name in classes and name not in seen and any(
            derives(b, seen + (name,)) for b in classes[name][1]))

    return {n: classes[n][0] for n in sorted(classes, key=str.lower)
            if n != "BuscaError" and derives(n)}


def write_errors() -> None:
    """errors.py's WHERE and errors.pyi, from the error classes of the package."""
    where = error_classes()
    path = ROOT / "errors.py"
    text = path.read_text(encoding="utf-8")
    start, end = text.index("WHERE = {\n"), text.index("\n}\n", text.index("WHERE = {\n"))
    rows = "".join(f'    "{n}": "{m}",\n' for n, m in where.items())
    path.write_text(text[:start] + "WHERE = {\n" + rows.rstrip("\n") + text[end:],
                    encoding="utf-8")
    stub_text = (ROOT / "errors.pyi").read_text(encoding="utf-8")
    head = stub_text[:stub_text.index("\nfrom ")]
    imports = "".join(f"from {m} import {n} as {n}\n" for n, m in where.items())
    (ROOT / "errors.pyi").write_text(
        head + "\n" + imports + "\n\nclass BuscaError(Exception): ...\n\n\n"
        "WHERE: dict[str, str]\n__all__: list[str]\n", encoding="utf-8")


def test_errors_where_lists_every_error_class():
    from busca.errors import WHERE

    assert WHERE == error_classes(), "run: python3 tests/test_faces.py"


if __name__ == "__main__":
    for face in FACES:
        path = ROOT / face / "__init__.py"
        path.with_suffix(".pyi").write_text(stub(path), encoding="utf-8")
    write_errors()
