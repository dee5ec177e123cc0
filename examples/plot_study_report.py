"""
The study's report on a few sets
================================

``pyopnb.study`` runs the papers' experiment: each method tuned by
cross-validation on repeated train/test splits of PMLB data sets, then
wins-ties-losses of every pair (the paper's Table 1) and boxplots of
standardised errors (Figure 2). Here it runs the quick profile on four
small sets written in PMLB's layout from data that ship with scikit-learn
and pyopnb, with five of the methods; the full study reads a folder of
PMLB sets (``python -m pyopnb.study --data PMLB_DIR --out DIR``).
"""
import gzip
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_iris, load_wine

from pyopnb.datasets import load_pima
from pyopnb.study import available, run_study, write_report

# %%
# Four sets in PMLB's layout: ``NAME/NAME.tsv.gz`` with a ``target`` column
# ---------------------------------------------------------------------------
root = Path(tempfile.mkdtemp())
pima = load_pima()
sets = {"iris": load_iris(return_X_y=True), "wine": load_wine(return_X_y=True),
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "pima": (np.vstack([pima.X_train, pima.X_test]), np.r_[pima.y_train, pima.y_test] == "Yes")}
for name, (X, y) in sets.items():
    (root / "data" / name).mkdir(parents=True)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(target=np.asarray(y, int))
    with gzip.open(root / "data" / name / f"{name}.tsv.gz", "wt") as fh:
        frame.to_csv(fh, sep="\t", index=False)
print(available(root / "data"))

# %%
# Run the quick profile and write the report
# ------------------------------------------
# Every result is stored as it comes (``results.sqlite``): a rerun
# resumes. The report holds Table 1 beside the paper's, each set's errors
# and Figure 2.
out = root / "study"
run_study(root / "data", out, methods=["OPNB", "OPNB-journal", "NB", "LDA", "SVM"], quick=True, n_splits=2,
          progress=False)
report = write_report(out)
errors = pd.read_csv(out / "errors.csv")
print(errors.head(12).to_string(index=False))
print((out / "table1.csv").read_text())

# %%
# Figure 2: the errors, standardised per set
# ------------------------------------------
fig, ax = plt.subplots(figsize=(8, 4))
ax.imshow(mpimg.imread(out / "figure2.png"))
ax.axis("off")
fig.tight_layout()
