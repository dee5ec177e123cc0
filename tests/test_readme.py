"""The README's code, run: every fenced block is preceded by a directive
saying whether the tests run it (``<!-- README test: runs -->``, ``runs in a
new folder`` for shell blocks) or why not (``not run (reason)``), and the
ones that run must run as written, in a fresh folder."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
# docs whose blocks build on each other: run in order, in one namespace
TUTORIALS = [Path(__file__).resolve().parents[1] / "docs" / "tutorial_formulation.md"]
_FENCE = re.compile(r"(?:<!-- README test: (?P<directive>[^>]*?) -->\n)?```(?P<lang>[a-z]*)\n(?P<code>.*?)```",
                    re.S)


def blocks(path: Path = README):
    text = path.read_text()
    out = []
    for k, m in enumerate(_FENCE.finditer(text)):
        before = text[: m.start("code")]
        line = before.count("\n")
        # the section's first word in the id: CI selects the kit's blocks by it (-k Validation)
        heading = re.findall(r"^## (\S+)", before, re.M)
        section = re.sub(r"\W", "", heading[-1]) if heading else "top"
        out.append(pytest.param(m.group("lang"), m.group("directive"), m.group("code"), id=f"{section}-line{line}"))
    return out


@pytest.mark.parametrize("lang, directive, code", blocks())
def test_readme_block(lang, directive, code, tmp_path, monkeypatch):
    assert directive is not None, "every README code block says whether the tests run it"
    if directive.startswith("not run"):
        pytest.skip(f"the README says: {directive}")
    monkeypatch.chdir(tmp_path)
    if lang == "python":
        assert directive == "runs", directive
        import matplotlib

        matplotlib.use("Agg")
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    elif lang == "sh":
        assert directive == "runs in a new folder", directive
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        r = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        pytest.fail(f"a README block in language {lang!r}: the tests run python and sh")


def test_the_readme_has_runnable_blocks():
    runs = [p for p in blocks() if p.values[1] and not p.values[1].startswith("not run")]
    assert len(runs) >= 8


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs_in_order(path, tmp_path, monkeypatch):
    import matplotlib

    from pyopnb import formulation as formulation_module

    matplotlib.use("Agg")
    # the tutorial registers a formulation: the registry is the same again after it
    monkeypatch.setattr(formulation_module, "FORMULATIONS", dict(formulation_module.FORMULATIONS))
    monkeypatch.chdir(tmp_path)
    found = blocks(path)
    assert found, f"{path.name} has no code blocks"
    namespace = {"__name__": "__tutorial__"}
    for p in found:
        lang, directive, code = p.values
        assert directive == "runs" and lang == "python", f"every block of {path.name} runs: {directive}"
        exec(compile(code, str(path), "exec"), namespace)
    assert "class-bandwidths" in formulation_module.FORMULATIONS
