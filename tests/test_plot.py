"""The projection plot (pyopnb.plot): what a user sees on the second day:
a titled legend, kept inside a plain savefig past ten classes, and class
regions without staircase edges."""
import matplotlib
import numpy as np
import pytest

from pyopnb import OPNB
from pyopnb.datasets import load_pima
from pyopnb.plot import plot

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def pima_model():
    d = load_pima()
    return OPNB(d.X_train, d.y_train, ndim=2, nbin=None), d


def test_the_legend_has_a_title(pima_model):
    model, d = pima_model
    ax = plot(model, d.X_test, yte=d.y_test)
    assert ax.get_legend().get_title().get_text() == "class"
    model.target = "type"
    try:
        assert plot(model).get_legend().get_title().get_text() == "type"
    finally:
        model.target = None


def test_a_legend_beside_the_axes_stays_in_a_plain_savefig(tmp_path):
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(12), 15)
    X = rng.normal(size=(180, 3)) + y[:, None] * [0.5, -0.3, 0.2]
    ax = plot(OPNB(X, y, ndim=2, nbin=None, lam=1e-2))
    fig = ax.figure
    fig.savefig(tmp_path / "many.png")  # no bbox_inches="tight"
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    page = fig.bbox
    assert legend.x0 >= page.x0 and legend.x1 <= page.x1 and legend.y0 >= page.y0 and legend.y1 <= page.y1
    plt.close(fig)


def test_class_regions_are_a_fine_image_not_a_filled_contour(pima_model):
    from matplotlib.contour import ContourSet
    from matplotlib.image import AxesImage

    model, d = pima_model
    ax = plot(model, d.X_test, add_cols=True)
    images = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    assert len(images) == 1 and images[0].get_array().shape == (400, 400)
    # the boundaries are lines; no filled contour draws the regions (its antialiased edges made halos)
    assert not any(isinstance(a, ContourSet) and a.filled for a in ax.get_children())
    # the image's classes are the model's at its cells' centres
    assert set(np.unique(images[0].get_array())) <= {0, 1}
