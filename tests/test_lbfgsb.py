"""The L-BFGS-B port (R's optim, version 2.3, unbounded): its stopping rules
and failures by construction; bit-equality with R's optim is checked live in
validation/ (base R)."""
import math

import numpy as np
import pytest

from pyopnb._core import lbfgsb as _lbfgsb


def rosenbrock(x):
    x = np.asarray(x)
    a = x[1:] - x[:-1] ** 2
    b = 1 - x[:-1]
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * a - 2 * b
    g[1:] += 200 * a
    return float(np.sum(100 * a * a + b * b)), g


def test_a_quadratic_is_solved_and_converges():
    A = np.diag([1.0, 4.0, 9.0]) + 0.1
    c = np.array([1.0, -2.0, 0.5])

    def fg(x):
        r = x - c
        return 0.5 * float(r @ A @ r), A @ r

    res = _lbfgsb.minimize(fg, np.zeros(3))
    assert res["convergence"] == _lbfgsb.CONVERGED
    np.testing.assert_allclose(res["x"], c, atol=1e-6)
    assert res["message"].startswith("CONVERGENCE")


def test_the_iteration_limit_counts_as_R_does():
    # optim stops when its count passes maxit: x is iterate maxit + 1, code 1
    res = _lbfgsb.minimize(rosenbrock, np.full(10, -1.2), maxit=5)
    assert res["convergence"] == _lbfgsb.ITERATION_LIMIT
    assert res["iterations"] == 6
    seen = []
    _lbfgsb.minimize(rosenbrock, np.full(10, -1.2), maxit=5, callback=lambda it, x, f, g: seen.append((it, f)))
    assert [it for it, _ in seen] == [1, 2, 3, 4, 5, 6]
    assert all(b[1] < a[1] for a, b in zip(seen, seen[1:]))


def test_a_line_search_that_cannot_descend_fails_with_code_52():
    """A value with a kink at its minimum x0 and a gradient that claims a
    descent: every trial step raises f, the search gives up after 20
    evaluations, and with an empty memory that is R's ABNORMAL_TERMINATION
    (code 52) with x restored to x0, bit for bit."""
    x0 = np.array([0.3, -0.2, 0.5])

    def fg(x):
        return float(np.sum(np.abs(x - x0))), np.ones(3)

    res = _lbfgsb.minimize(fg, x0)
    assert res["convergence"] == _lbfgsb.LINE_SEARCH_FAILED
    assert res["message"] == "ERROR: ABNORMAL_TERMINATION_IN_LNSRCH"
    np.testing.assert_array_equal(res["x"], x0)
    assert res["evaluations"] == 21  # the start and 20 trials


def test_a_value_that_is_not_finite_raises():
    def fg(x):
        return (math.inf if x[0] > 0.5 else float(np.sum((x - 1) ** 2))), 2 * (x - 1)

    with pytest.raises(FloatingPointError, match="finite values of 'fn'"):
        _lbfgsb.minimize(fg, np.zeros(2))


def test_a_zero_gradient_at_the_start_converges_at_once():
    res = _lbfgsb.minimize(lambda x: (1.0, np.zeros(2)), np.ones(2))
    assert res["convergence"] == 0 and res["iterations"] == 0 and res["evaluations"] == 1


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="no variables"):
        _lbfgsb.minimize(rosenbrock, np.zeros(0))
    with pytest.raises(ValueError, match="m must be"):
        _lbfgsb.minimize(rosenbrock, np.zeros(2), m=0)
    with pytest.raises(ValueError, match="gradient has 1 entries for 2"):
        _lbfgsb.minimize(lambda x: (0.0, np.zeros(1)), np.zeros(2))
