"""scripts/mutations.py stays true to the code: each mutation's original text
occurs exactly once in its file, so ``scripts/mutate.py`` can run it (the code
moves; the table must move with it)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_mutation_applies_to_exactly_one_place() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mutations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    wrong = {
        m.name: (ROOT / m.path).read_text(encoding="utf-8").count(m.original)
        for m in mutations.MUTATIONS
    }
    assert {name: n for name, n in wrong.items() if n != 1} == {}
    for m in mutations.MUTATIONS:
        assert all((ROOT / t.split("::")[0]).exists() for t in m.tests), m.name
