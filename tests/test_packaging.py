"""The package list in pyproject.toml names every folder of the package, so that a plain
`pip install .` (the README's first command) installs all of busca, not only what an editable
install happens to find."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTSIDE = {"tests", "bench", "docs", ".venv", ".git", "build"}


def test_every_folder_with_an_init_is_a_listed_package():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {"busca"}
    for init in REPO.rglob("__init__.py"):
        parts = init.parent.relative_to(REPO).parts
        if parts and parts[0] not in OUTSIDE and not parts[0].startswith("."):
            found.add(".".join(("busca", *parts)))
    assert found == listed
