"""
A scikit-learn pipeline with GridSearchCV
=========================================

``OPNBClassifier`` is a scikit-learn estimator: it goes into pipelines,
grid searches and cross-validation as any classifier, predicts in log
space, and transforms data onto its projection.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pyopnb import OPNBClassifier

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, stratify=y, random_state=0)

# %%
# Tune the penalty and the number of columns
# ------------------------------------------
# set_output before fitting: the classifier then learns the scaler's column
# names, and later outputs keep them
pipe = make_pipeline(StandardScaler(), OPNBClassifier()).set_output(transform="pandas")
grid = {"opnbclassifier__lam": [1e-3, 1e-2, 1e-1], "opnbclassifier__ndim": [1, 2, 3]}
search = GridSearchCV(pipe, grid, cv=3).fit(Xtr, ytr)
print("best", search.best_params_, "test accuracy", search.score(Xte, yte))

# %%
# The cross-validated accuracy over the grid
# ------------------------------------------
res = search.cv_results_
fig, ax = plt.subplots(figsize=(5, 3))
for lam in grid["opnbclassifier__lam"]:
    rows = np.flatnonzero(res["param_opnbclassifier__lam"] == lam)
    ax.plot(res["param_opnbclassifier__ndim"][rows].astype(int), res["mean_test_score"][rows], "o-",
            label=f"lam {lam:g}")
ax.set_xlabel("ndim")
ax.set_ylabel("mean CV accuracy")
ax.legend()
fig.tight_layout()

# %%
# The projection as a transformer
# -------------------------------
# ``transform`` gives ``(X - mu) @ V`` after the scaler; with
# ``set_output(transform="pandas")``, set before the fit, the columns are
# named.
Z = search.best_estimator_.transform(Xte)
print(Z.head())

# %%
# The classifier on its projection
# --------------------------------
# ``OPNBDisplay.from_estimator`` takes the pipeline and the raw data: the
# scaler transforms them first. A model of more than two columns decides
# with columns the plane does not show, so its points are coloured by the
# class ``predict`` gives them (the title says so).
from pyopnb import OPNBDisplay  # noqa: E402

three = make_pipeline(StandardScaler(), OPNBClassifier(ndim=3)).fit(Xtr, ytr)
disp = OPNBDisplay.from_estimator(three, Xte, yte)
