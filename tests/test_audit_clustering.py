"""The root-cause clustering of signatures without scikit-learn.

cluster_signatures computes the labels scikit-learn's AgglomerativeClustering (complete linkage,
manhattan, cut at 0.5) gives the one-hot signature tokens, without importing it (its import cost
the audit 2.5-3 CPU s and ~110 MiB). The labels' values, not only the partition, reach the output
(equal-size clusters are numbered in label order), so they are checked against scikit-learn's
and the linkage matrix against scipy's, on inputs full of ties; and the audit is checked not to
import scikit-learn at all.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from baseline.fleet.audit import _complete_linkage, _cut_tree, _tokens, cluster_signatures

REPO = Path(__file__).resolve().parents[1]
SIGNATURE_COLUMNS = ("operation", "bifurcation_probe", "bifurcation_errno", "errno", "origin_layer", "pattern",
                     "divergence", "deeper_than_probes")
# few values a column, vendor twins among them (masked to one token), nulls: many equal rows and
# many equal distances, where the order of ties decides the tree
VALUES = {
    "operation": ["ibv_reg_mr", "ibv_modify_qp", "ncclCommInitRank"],
    "bifurcation_probe": ["mlx5_ib_reg_user_mr", "bnxt_re_reg_user_mr", "ib_umem_get", "__ib_umem_get", None],
    "bifurcation_errno": ["EFAULT", "ENOMEM", None],
    "errno": ["EFAULT", "ENOMEM", "ETIMEDOUT"],
    "origin_layer": ["core", "driver", None],
    "pattern": ["a>b>c", "a>b"],
    "divergence": ["mlx5_cmd_exec", "irdma_cmd_exec", None],
    "deeper_than_probes": [True, False],
}


def _signatures(rng: np.random.Generator, n: int) -> pl.DataFrame:
    data = {c: [VALUES[c][int(i)] for i in rng.integers(0, len(VALUES[c]), n)] for c in SIGNATURE_COLUMNS}
    return pl.DataFrame(data, schema={c: pl.Boolean if c == "deeper_than_probes" else pl.String
                                      for c in SIGNATURE_COLUMNS})


def _scikit_learn_labels(signatures: pl.DataFrame) -> np.ndarray:
    """What cluster_signatures computed before, with scikit-learn (the reference)."""
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.feature_extraction import DictVectorizer

    x = DictVectorizer(sparse=False).fit_transform([_tokens(r) for r in signatures.iter_rows(named=True)])
    model = AgglomerativeClustering(n_clusters=None, distance_threshold=0.5, metric="manhattan", linkage="complete")
    return model.fit_predict(x)


def test_signature_labels_are_scikit_learns():
    rng = np.random.default_rng(12)
    merged_some = False
    for _ in range(300):
        signatures = _signatures(rng, int(rng.integers(2, 45)))
        labels = cluster_signatures(signatures)
        assert np.array_equal(labels, _scikit_learn_labels(signatures)), signatures
        merged_some = merged_some or len(set(labels.tolist())) < signatures.height
    assert merged_some  # vendor twins and repeated rows were merged somewhere
    assert cluster_signatures(_signatures(rng, 1)).tolist() == [0]
    assert cluster_signatures(_signatures(rng, 0)).tolist() == []


@pytest.mark.parametrize("threshold", [0.5, 1.5, 3.0])
def test_linkage_and_cut_are_scipys_and_scikit_learns_on_tied_distances(threshold):
    """Small integer features: distances tie everywhere, at every height of the tree."""
    from scipy.cluster.hierarchy import linkage
    from sklearn.cluster import AgglomerativeClustering

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        x = rng.integers(0, 3, size=(n, int(rng.integers(1, 5)))).astype(float)
        dist = np.stack([np.abs(x - x[i]).sum(axis=1) for i in range(n)])
        with warnings.catch_warnings():  # a square x may look like a distance matrix to scipy
            warnings.simplefilter("ignore")
            assert np.array_equal(_complete_linkage(dist), linkage(x, method="complete", metric="cityblock"))
            reference = AgglomerativeClustering(n_clusters=None, distance_threshold=threshold, metric="manhattan",
                                                linkage="complete").fit_predict(x)
        assert np.array_equal(_cut_tree(_complete_linkage(dist), threshold), reference)


def test_the_audit_does_not_import_scikit_learn(tmp_path):
    """A real audit (fleetgen's fleet, clusters found) in a fresh interpreter leaves scikit-learn
    unimported."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "from fleetgen import generate\n"
        "from baseline.fleet.audit import run_audit\n"
        f"generate({str(tmp_path / 'fleet')!r}, hosts=12, hours=2.0, seed=3)\n"
        f"r = run_audit({str(tmp_path / 'fleet')!r}, {str(tmp_path / 'out')!r})\n"
        "print(r.clusters.height, sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn')[:3])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    clusters, modules = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(clusters) > 0
    assert modules == "[]"
