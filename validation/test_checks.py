"""Every check of validation.checks, as a test (recorded ones always run)."""
import pytest

from pyopnb.validation.checks import CHECKS, Skip


@pytest.mark.parametrize("check", CHECKS, ids=[c.id for c in CHECKS])
def test_check(check):
    try:
        results = check()
    except Skip as reason:
        pytest.skip(f"{check.source} check needs R: {reason}")
    assert results, "a check must compare something"
    failed = [r for r in results if not r.ok]
    assert not failed, "\n".join(f"{r.what}: max abs {r.max_abs:.3g}, max rel {r.max_rel:.3g} "
                                 f"(tolerance {r.tolerance}) {r.note}" for r in failed)
