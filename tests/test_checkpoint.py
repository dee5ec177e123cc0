"""pyopnb.checkpoint: a fit stopped anywhere resumes from its checkpoint with
the bits of a fit never stopped, making none of the recorded evaluations
again; a checkpoint of another fit, or no checkpoint at all, is refused and
left as it is."""
import numpy as np
import pytest

from pyopnb import parts
from pyopnb.datasets import load_pima
from pyopnb.formulation import RFormulation
from pyopnb.part_fit import fit_projection_local

pytestmark = pytest.mark.filterwarnings("ignore::pyopnb.ConvergenceWarning")


class _Stop(Exception):
    pass


@pytest.fixture(scope="module")
def pima():
    d = load_pima()
    n = d.X_train.shape[0]
    return np.asarray(d.X_train), np.asarray(d.y_train), [0, n]


@pytest.fixture
def counted(monkeypatch):
    """The evaluations made (each PartsEvaluator value_and_grad)."""
    made = []
    real = parts.PartsEvaluator.value_and_grad

    def counting(self, V):
        made.append(1)
        return real(self, V)

    monkeypatch.setattr(parts.PartsEvaluator, "value_and_grad", counting)
    return made


@pytest.mark.parametrize("stop_at", [1, 4])
def test_a_stopped_fit_resumes_to_the_same_bits(pima, counted, tmp_path, stop_at):
    X, y, bounds = pima
    whole = fit_projection_local(X, y, bounds, ndim=2)
    evaluations = len(counted)
    path = tmp_path / "fit.ckpt"

    def stop(iteration, fval, gnorm):
        if iteration == stop_at:
            raise _Stop

    with pytest.raises(_Stop):
        fit_projection_local(X, y, bounds, ndim=2, checkpoint=path, callback=stop)
    with np.load(path) as f:
        recorded = f["F"].size
    assert 0 < recorded < evaluations
    counted.clear()
    resumed = fit_projection_local(X, y, bounds, ndim=2, checkpoint=path)
    assert np.array_equal(resumed.V, whole.V) and resumed.fval == whole.fval and np.array_equal(resumed.h, whole.h)
    assert resumed.convergence == whole.convergence
    # only the evaluations past the record were made
    assert len(counted) == evaluations - recorded
    with np.load(path) as f:
        assert f["F"].size == evaluations
    # a finished fit's checkpoint replays whole: no evaluation made
    counted.clear()
    again = fit_projection_local(X, y, bounds, ndim=2, checkpoint=path)
    assert np.array_equal(again.V, whole.V) and counted == []


def test_another_fits_checkpoint_is_refused_and_kept(pima, tmp_path):
    X, y, bounds = pima
    path = tmp_path / "fit.ckpt"
    fit_projection_local(X, y, bounds, ndim=2, maxit=2, checkpoint=path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="another fit"):
        fit_projection_local(X, y, bounds, RFormulation(lam=1e-2), ndim=2, checkpoint=path)
    with pytest.raises(ValueError, match="another fit"):
        fit_projection_local(X[:, ::-1], y, bounds, ndim=2, checkpoint=path)
    assert path.read_bytes() == before
    # a larger maxit goes on from the same record
    more = fit_projection_local(X, y, bounds, ndim=2, maxit=5, checkpoint=path)
    assert np.array_equal(more.V, fit_projection_local(X, y, bounds, ndim=2, maxit=5).V)
    other = tmp_path / "notes.txt"
    other.write_text("my notes")
    with pytest.raises(ValueError, match="not a pyopnb checkpoint"):
        fit_projection_local(X, y, bounds, ndim=2, checkpoint=other)
    assert other.read_text() == "my notes"
