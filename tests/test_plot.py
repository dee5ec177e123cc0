"""The projection plot (pyopnb.plot): boundaries, the columns' own
bandwidths, a titled legend kept inside a plain savefig, styles past ten
classes, one-column models, test points by class, crisp class regions."""
import matplotlib
import numpy as np
import pytest

from pyopnb import OPNB
from pyopnb.datasets import load_pima
from pyopnb.plot import plot

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def model(pima):
    return OPNB(pima.X_train, pima.y_train, ndim=3, nbin=None)


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


def test_plot_styles_stay_distinct_past_ten_classes():
    from matplotlib.colors import to_rgba

    from pyopnb.plot import class_styles, plot

    for K in (3, 10, 26, 60, 75):
        styles = class_styles(K)
        colours = {tuple(np.round(to_rgba(c), 6)) for c, _ in styles}
        assert len(colours) == K, K
    rng = np.random.default_rng(0)
    K = 26
    y = np.repeat([chr(65 + k) for k in range(K)], 12)
    X = rng.normal(size=(y.size, 3)) + np.repeat(rng.normal(scale=3, size=(K, 3)), 12, axis=0)
    m = OPNB(X, y, ndim=2, nbin=None)
    ax = plot(m)
    faces = [tuple(np.round(c.get_facecolor()[0], 6)) for c in _scatters(ax)]
    assert len(set(faces)) == K
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [chr(65 + k) for k in range(K)]
    # beside the axes, not over the data
    fig = ax.figure
    fig.canvas.draw()
    lbox = legend.get_window_extent()
    abox = ax.get_window_extent()
    assert lbox.x0 >= abox.x1


def test_plot_one_column_model_draws_class_densities(pima):
    from pyopnb.plot import plot

    m = OPNB(pima.X_train, pima.y_train, ndim=1, nbin=None)
    ax = plot(m, pima.X_test, yte=pima.y_test)
    curves = ax.get_lines()
    dens = [ln for ln in curves if ln.get_label() in ("No", "Yes")]
    assert len(dens) == 2
    # PI_k f_k integrates to PI_k along the projection (the curve spans the data widely)
    for ln in dens:
        x, f = ln.get_xdata(), ln.get_ydata()
        k = list(m.ynames).index(ln.get_label())
        assert np.trapezoid(f, x) == pytest.approx(m.PI[k], abs=0.01)
    # training rug (200 points) and test points by true class (332 points in two groups)
    sizes = sorted(len(c.get_offsets()) for c in _scatters(ax))
    assert sum(sizes) == 200 + 332 and len(sizes) == 4
    with pytest.raises(ValueError, match=r"dims must be \(1,\)"):
        plot(m, dims=(1, 2))


def test_plot_colours_test_points_by_true_class(df_model, pima):
    from pyopnb.plot import plot

    ax = plot(df_model, pima.X_test, yte=pima.y_test)
    sc = _scatters(ax)
    hollow = [c for c in sc if len(c.get_facecolors()) == 0 or c.get_facecolors()[0][3] == 0]
    assert sorted(len(c.get_offsets()) for c in hollow) == sorted(
        [int(np.sum(pima.y_test == "No")), int(np.sum(pima.y_test == "Yes"))])
    train = [c for c in sc if c not in hollow]
    for t, h in zip(sorted(train, key=lambda c: c.get_label()), hollow):
        assert np.allclose(t.get_facecolors()[0][:3], h.get_edgecolors()[0][:3])
    with pytest.raises(ValueError, match=r"labels \['maybe'\] that are not among"):
        plot(df_model, pima.X_test[:3], yte=["No", "maybe", "Yes"])
    with pytest.raises(ValueError, match="yte has 2 labels but Xte has 3 rows"):
        plot(df_model, pima.X_test[:3], yte=["No", "Yes"])


def test_plot_draws_what_it_says(model, pima, tmp_path):
    from matplotlib.collections import PathCollection

    from pyopnb.plot import plot

    ax = plot(model, pima.X_test, dims=(1, 3), add_cols=True)
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    sizes = sorted(len(c.get_offsets()) for c in scatters)
    assert sizes == [68, 132, 332]  # classes Yes, No, and the test points
    assert ax.get_xlabel() == "projection 1" and ax.get_ylabel() == "projection 3"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["No", "Yes", "test points"]
    # a boundary was drawn (contour lines) and the figure renders to a PNG
    assert any(type(c).__name__ == "QuadContourSet" for c in ax.collections)
    out = tmp_path / "p.png"
    ax.figure.savefig(out)
    assert out.stat().st_size > 10_000
    with pytest.raises(ValueError, match="dims must be two different columns"):
        plot(model, dims=(1, 4))


def test_plot_uses_the_bandwidths_of_the_columns_shown(model):
    # R uses those of columns 1 and 2 whatever dims says (SPEC defect 3)
    from matplotlib.pyplot import subplots

    from pyopnb.plot import plot

    m2 = type(model)(**{**{k: model[k] for k in model.keys()}, "h": model.h * np.array([1.0, 1.0, 3.0])})
    _, ax1 = subplots()
    _, ax2 = subplots()
    plot(model, dims=(1, 2), ax=ax1)
    plot(m2, dims=(1, 2), ax=ax2)
    seg1 = [p.vertices for c in ax1.collections if hasattr(c, "get_paths") for p in c.get_paths()]
    seg2 = [p.vertices for c in ax2.collections if hasattr(c, "get_paths") for p in c.get_paths()]
    assert all(np.array_equal(a, b) for a, b in zip(seg1, seg2))  # column 3's bandwidth plays no part
    _, ax3 = subplots()
    _, ax4 = subplots()
    plot(model, dims=(1, 3), ax=ax3)
    plot(m2, dims=(1, 3), ax=ax4)
    seg3 = [p.vertices for c in ax3.collections if type(c).__name__ != "PathCollection" for p in c.get_paths()]
    seg4 = [p.vertices for c in ax4.collections if type(c).__name__ != "PathCollection" for p in c.get_paths()]
    assert any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(seg3, seg4))


def _scatters(ax):
    from matplotlib.collections import PathCollection

    return [c for c in ax.collections if isinstance(c, PathCollection)]


def test_plot_is_Rs_function_however_it_is_imported(model):
    # a lazy attribute would be replaced by the submodule once that is imported
    import subprocess
    import sys

    code = ("import matplotlib; matplotlib.use('Agg'); import numpy as np; import pyopnb.plot; "
            "from pyopnb import plot, OPNB; from pyopnb import *; "
            "rng = np.random.default_rng(0); X = rng.normal(size=(40, 3)); y = np.repeat([0, 1], 20); "
            "m = OPNB(X, y, ndim=2, maxit=3); "
            "import pyopnb; assert callable(pyopnb.plot) and pyopnb.plot is plot; "
            "from pyopnb.plot import plot as p2, class_styles; assert p2 is plot; "
            "ax = plot(m); print(type(ax).__name__)")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Axes"
