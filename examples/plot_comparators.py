"""
The comparators on one data set
===============================

The classifiers the OPNB papers compare with are scikit-learn estimators
in ``pyopnb.comparators``. Here each is cross-validated on the wine data
beside OPNB, with its default parameters.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pyopnb import OPNBClassifier
from pyopnb.comparators import CCICA, KDDA, LDA, OPGD, RDA, KernelNB, SelectiveNB

X, y = load_wine(return_X_y=True)
methods = {
    "OPNB": OPNBClassifier(ndim=2),
    "OPNB-journal": OPNBClassifier(formulation="journal", ndim=2),
    "NB": KernelNB(),
    "CCICA": CCICA(),
    "KDDA": KDDA(),
    "LDA": LDA(),
    "RDA": RDA(),
    "OPGD": OPGD(),
    "SelectiveNB": SelectiveNB(),
}
folds = StratifiedKFold(5, shuffle=True, random_state=0)
errors = {name: 1 - cross_val_score(make_pipeline(StandardScaler(), est), X, y, cv=folds)
          for name, est in methods.items()}
for name, e in errors.items():
    print(f"{name:13s} error {e.mean():.3f} (sd {e.std():.3f})")

# %%
# Errors over the five folds
# --------------------------
fig, ax = plt.subplots(figsize=(7, 3))
ax.boxplot(list(errors.values()), tick_labels=list(errors), vert=True)
ax.set_ylabel("test error")
plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
fig.tight_layout()
