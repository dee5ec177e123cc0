"""
The journal formulation beside R's
==================================

pyopnb fits two formulations of OPNB:

- **R's** (``OPNB``, ``formulation="R"``): the penalised objective of R's
  OPNB 1.0, bandwidth 1 on scaled data, R's PCA start. Its numbers are R's.
- **The journal's** (``opnb_journal``, ``formulation="journal"``): the
  method as published, columns normalised inside the objective, a
  bandwidth per class from Silverman's rule times ``gamma``, LDA's start.

Which to choose: R's to reproduce R, or where you tune one parameter
(``lam``); the journal's to follow the paper, tuning ``gamma`` and
``ndim``. In this project's study the two have the same mean test error
over 140 PMLB sets; the journal's is weaker on one-hot lattices and small
classes at small ``gamma`` (narrow bandwidths memorise the lattice).
Cross-validate both on your data.
"""
import matplotlib.pyplot as plt
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split

from pyopnb import OPNB_CV_lam, opnb_journal_cv, plot, predict

X, y = load_wine(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=1)

# %%
# Tune each as its paper does
# ---------------------------
r_cv = OPNB_CV_lam(Xtr, ytr, 3, nlam=4, ndim=2)
j_cv = opnb_journal_cv(Xtr, ytr, 3, gamma=[0.5, 1.0, 2.0], ndim=[1, 2])
for name, cv in (("R's", r_cv), ("journal's", j_cv)):
    acc = (predict(cv["model"], Xte)["class"] == yte).mean()
    print(f"{name:10s} test accuracy {acc:.3f}")
print("R's best lam", r_cv["cv_stats"][r_cv["cv_stats"][:, 1].argmax(), 0])
print("journal's best gamma", j_cv["gamma"], "ndim", j_cv["ndim"])

# %%
# Their projections
# -----------------
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
plot(r_cv["model"], Xte, yte=yte, ax=axes[0])
axes[0].set_title("R's formulation")
model = j_cv["model"]
if model.ndim >= 2:
    plot(model, Xte, yte=yte, ax=axes[1])
else:
    plot(model, Xte, yte=yte, ax=axes[1], dims=(1,))
axes[1].set_title("the journal's")
fig.tight_layout()
