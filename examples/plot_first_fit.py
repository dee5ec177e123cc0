"""
A first fit and its projection
==============================

OPNB on the Pima data that ship with pyopnb (R's ``MASS::Pima.tr`` for
training and ``Pima.te`` for testing), with R's defaults: a penalty of
1e-3, 1000 bins per projected column, scaled columns, R's start.
"""

# %%
# Fit and predict
# ---------------
# ``OPNB`` takes R's arguments; ``predict`` returns R's posteriors and
# classes.
from pyopnb import OPNB, plot, predict
from pyopnb.datasets import load_pima

d = load_pima()
model = OPNB(d.X_train, d.y_train, ndim=2)
out = predict(model, d.X_test)
print(model)
print("test accuracy", (out["class"] == d.y_test).mean())

# %%
# The projection
# --------------
# Training points by class, the two-column model's decision boundary, and
# the test points as hollow markers in their true class's style.
ax = plot(model, d.X_test, yte=d.y_test, add_cols=True)
ax.set_title("OPNB on Pima: the first two projection columns")

# %%
# What the columns weigh
# ----------------------
# ``V`` maps raw data: ``(X - mu) @ V``. Scaled by each feature's sd, its
# entries show what each column reads.
import matplotlib.pyplot as plt
import numpy as np

weights = model.V / model.scales[:, None]
fig, ax = plt.subplots(figsize=(6, 3))
x = np.arange(len(d.feature_names))
ax.bar(x - 0.2, weights[:, 0], 0.4, label="column 1")
ax.bar(x + 0.2, weights[:, 1], 0.4, label="column 2")
ax.set_xticks(x, d.feature_names)
ax.set_ylabel("weight on the scaled feature")
ax.legend()
fig.tight_layout()
