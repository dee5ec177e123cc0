"""The README's code and the documentation's, run: every fenced block is
preceded by a directive saying whether the tests run it (``<!-- README
test: runs -->``, ``runs in a new folder`` for shell blocks, ``runs in a new
folder where R has OPNB and FKSUM`` for those that record R's side) or why not
(``not run (reason)``), and the ones that run must run as written, in a
fresh folder. The pages are the README, the user guide (docs/guide/) and
the guide for moving from R."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# the pages whose every block says whether it runs: the README and the docs' guides
PAGES = [README, ROOT / "docs" / "migration.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
# docs whose blocks build on each other: run in order, in one namespace
TUTORIALS = [ROOT / "docs" / "tutorial_formulation.md"]
# a shell block that records R's side: run where R has the packages, else skipped saying why
WITH_R = "runs in a new folder where R has OPNB and FKSUM"
_FENCE = re.compile(r"(?:<!-- README test: (?P<directive>[^>]*?) -->\n)?```(?P<lang>[a-z]*)\n(?P<code>.*?)```",
                    re.S)


def blocks(path: Path = README):
    text = path.read_text()
    out = []
    for k, m in enumerate(_FENCE.finditer(text)):
        before = text[: m.start("code")]
        line = before.count("\n")
        # the page and its section's first word in the id: CI selects the kit's blocks by them (-k Validation)
        heading = re.findall(r"^##? (\S+)", before, re.M)
        section = re.sub(r"\W", "", heading[-1]) if heading else "top"
        out.append(pytest.param(m.group("lang"), m.group("directive"), m.group("code"), path,
                                id=f"{path.stem}-{section}-line{line}"))
    return out


def page_blocks():
    return [p for page in PAGES for p in blocks(page)]


@pytest.mark.parametrize("lang, directive, code, path", page_blocks())
def test_readme_block(lang, directive, code, path, tmp_path, monkeypatch):
    assert directive is not None, f"every code block of {path.name} says whether the tests run it"
    if directive.startswith("not run"):
        pytest.skip(f"the README says: {directive}")
    monkeypatch.chdir(tmp_path)
    if lang == "python":
        assert directive == "runs", directive
        import matplotlib

        matplotlib.use("Agg")
        exec(compile(code, str(path), "exec"), {"__name__": "__readme__"})
    elif lang == "sh":
        assert directive in ("runs in a new folder", WITH_R), directive
        if directive == WITH_R:
            from pyopnb.validation import rbridge

            reason = rbridge.why_not(["OPNB", "FKSUM"])
            if reason:
                pytest.skip(f"the block needs R's OPNB and FKSUM: {reason}")
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        r = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        pytest.fail(f"a README block in language {lang!r}: the tests run python and sh")


def test_the_pages_have_runnable_blocks():
    runs = [p for p in page_blocks() if p.values[1] and not p.values[1].startswith("not run")]
    assert len(runs) >= 12
    assert any(p.values[3] == README for p in runs), "the README's first fit runs"
    guides = {p.values[3].stem for p in runs}
    assert {"migration", "r_api", "sklearn", "validation"} <= guides, guides


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
        lang, directive, code, _ = p.values
        assert directive == "runs" and lang == "python", f"every block of {path.name} runs: {directive}"
        exec(compile(code, str(path), "exec"), namespace)
    assert "class-bandwidths" in formulation_module.FORMULATIONS
