"""Model files: RDS and JSON round trips, bad files, nothing written on failure."""
import gzip
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyopnb import OPNB, predict, read_rds, write_rds
from pyopnb.rio import read_json, read_model, write_json, write_model


@pytest.fixture(scope="module")
def model(pima):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    return OPNB(pd.DataFrame(pima.X_train, columns=list(pima.feature_names)), pima.y_train, ndim=3)


@pytest.mark.parametrize("suffix", [".rds", ".json"])
def test_round_trip_predicts_identically(model, pima, tmp_path, suffix):
    path = tmp_path / f"m{suffix}"
    write_model(model, path)
    back = read_model(path)
    for k in model.keys():
        a, b = model[k], back[k]
        if k == "ynames":
            assert [str(v) for v in a] == [str(v) for v in b]
        else:
            np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), err_msg=k)
    assert back.feature_names == pima.feature_names
    np.testing.assert_array_equal(predict(back, pima.X_test)["posterior"], predict(model, pima.X_test)["posterior"])


def _write_r_list(path, fields, cls):
    """An RDS file holding an R list with the given fields and class (no R needed)."""
    import rdata
    from rdata.conversion.to_r import build_r_object
    from rdata.parser import RObjectType

    class Holder:
        pass

    def ctor(_, conv):
        vals = [conv.convert_to_r_object(np.atleast_1d(np.asarray(v, dtype=float))) for v in fields.values()]
        attrs = {"names": np.asarray(list(fields), dtype=object)}
        if cls:
            attrs["class"] = cls
        return build_r_object(RObjectType.VEC, value=vals, is_object=bool(cls), attributes=conv.convert_to_r_attributes(attrs))

    rdata.write_rds(path, Holder(), constructor_dict={Holder: ctor})


def test_bad_files(model, tmp_path):
    not_rds = tmp_path / "a.rds"
    not_rds.write_text("hello")
    with pytest.raises(ValueError, match="not a readable RDS file"):
        read_rds(not_rds)
    good = tmp_path / "good.rds"
    write_rds(model, good)
    truncated = tmp_path / "t.rds"
    raw = gzip.decompress(good.read_bytes())
    truncated.write_bytes(gzip.compress(raw[: len(raw) // 2]))
    with pytest.raises(ValueError, match="not a readable RDS file"):
        read_rds(truncated)
    other = tmp_path / "lm.rds"
    _write_r_list(other, {"coefficients": [1.0, 2.0]}, "lm")
    with pytest.raises(ValueError, match=r"of class \['lm'\], not an OPNB model"):
        read_rds(other)
    missing = tmp_path / "missing.rds"
    _write_r_list(missing, {"V": [1.0], "X": [1.0]}, "OPNB")
    with pytest.raises(ValueError, match=r"fields \['y', 'PI', 'h'"):
        read_rds(missing)
    with pytest.raises(ValueError, match="no such file"):
        read_rds(tmp_path / "nope.rds")
    bad_json = tmp_path / "m.json"
    bad_json.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a pyopnb model"):
        read_json(bad_json)
    with pytest.raises(ValueError, match="model files are .rds or .json"):
        read_model(tmp_path / "m.txt")


def test_nothing_written_on_failure(model, tmp_path):
    target = tmp_path / "out.rds"
    broken = type(model)(**{**{k: model[k] for k in model.keys()}, "h": model.h[:, :2]})
    with pytest.raises(ValueError, match="inconsistent OPNB model"):
        write_rds(broken, target)
    assert list(tmp_path.iterdir()) == []
    target.write_text("keep me")
    with pytest.raises(ValueError, match="inconsistent OPNB model"):
        write_rds(broken, target)
    assert target.read_text() == "keep me"  # an existing file is left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.rds"]
    with pytest.raises(ValueError, match="does not exist"):
        write_rds(model, tmp_path / "no" / "such" / "dir.rds")


@pytest.mark.parametrize("kind", ["int", "float", "bool", "str"])
@pytest.mark.parametrize("suffix", [".rds", ".json"])
def test_a_round_trip_keeps_the_labels_type_and_the_convergence_code(tmp_path, kind, suffix):
    from sklearn.datasets import load_iris

    from pyopnb import read_model, write_model

    d = load_iris()
    y = {"int": d.target, "float": d.target + 0.25, "bool": d.target == 2,
         "str": np.array(["setosa", "versicolor", "virginica"])[d.target]}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = OPNB(d.data, y, ndim=2, maxit=3)  # stops at its iteration limit: code 1
    assert m.convergence == 1
    path = tmp_path / f"m{suffix}"
    write_model(m, path)
    back = read_model(path)
    assert back.convergence == 1
    assert back.ynames.dtype.kind == m.ynames.dtype.kind
    np.testing.assert_array_equal(back.ynames, m.ynames)
    np.testing.assert_array_equal(predict(back, d.data)["class"] == y, predict(m, d.data)["class"] == y)
    assert np.mean(predict(back, d.data)["class"] == y) > 0.9


def test_a_model_R_saved_has_an_unknown_convergence():
    m = read_rds(Path(__file__).resolve().parents[1] / "pyopnb" / "validation" / "models" / "pima_ndim4.rds")
    assert m.convergence is None
    assert "convergence=None (unknown: R does not keep it)" in repr(m)
    assert m.ynames.dtype == object and list(m.ynames) == ["No", "Yes"]


@pytest.mark.parametrize("writer", [write_rds, write_json, write_model])
def test_an_existing_file_is_replaced_only_when_asked(model, tmp_path, writer):
    path = tmp_path / ("m.json" if writer is write_json else "m.rds")
    path.write_text("mine")
    with pytest.raises(FileExistsError, match=r"m\.(rds|json): exists, .* \(pass overwrite=True to replace it"):
        writer(model, path)
    assert path.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    writer(model, path, overwrite=True)
    np.testing.assert_array_equal(read_model(path).V, model.V)


def test_a_file_made_while_a_model_is_written_is_kept(model, tmp_path):
    # another writer takes the name after the check, before the move: its file stays, ours is refused
    from pyopnb.rio import atomic_path

    path = tmp_path / "m.json"
    with pytest.raises(FileExistsError, match="m.json: exists"):
        with atomic_path(path) as tmp:
            tmp.write_text("ours")
            path.write_text("theirs")
    assert path.read_text() == "theirs" and sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_written_files_get_the_umask_mode(df_model, tmp_path, umask):
    old = os.umask(umask)
    try:
        write_rds(df_model, tmp_path / "m.rds")
        write_json(df_model, tmp_path / "m.json")
        (tmp_path / "plain").write_text("x")
    finally:
        os.umask(old)
    plain = (tmp_path / "plain").stat().st_mode & 0o777
    assert plain == 0o666 & ~umask
    assert (tmp_path / "m.rds").stat().st_mode & 0o777 == plain
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == plain
    # an existing file keeps its own mode, as a plain open() would leave it
    os.chmod(tmp_path / "m.rds", 0o600)
    write_rds(df_model, tmp_path / "m.rds", overwrite=True)
    assert (tmp_path / "m.rds").stat().st_mode & 0o777 == 0o600


def test_files_that_are_not_a_model_say_what_to_save(tmp_path):
    # an .RData workspace (save()) and the list OPNB_CV_lam returns, written as R writes them
    import rdata

    cv = tmp_path / "cv.rds"
    _write_r_list(cv, {"model": [1.0], "cv_stats": [1.0, 0.8]}, None)
    with pytest.raises(ValueError, match=r"the list OPNB_CV_lam returns .*saveRDS\(cv\$model"):
        read_rds(cv)
    plain = tmp_path / "v.rds"

    class Holder:
        pass

    rdata.write_rds(plain, Holder(), constructor_dict={Holder: lambda _, conv: conv.convert_to_r_object(
        np.arange(3.0))})
    with pytest.raises(ValueError, match=r"a plain R object \(a numeric vector\), not an OPNB model"):
        read_rds(plain)
    rdata_file = tmp_path / "m.RData"
    raw = gzip.decompress(plain.read_bytes())
    rdata_file.write_bytes(gzip.compress(b"RDX3\n" + raw))
    with pytest.raises(ValueError, match=r"an \.RData file \(R's save\(\)\).*saveRDS\(model"):
        read_rds(rdata_file)
