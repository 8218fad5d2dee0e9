"""2-D projections of vectors for the phrase map: PCA (numpy SVD) and a small exact t-SNE in numpy."""
from __future__ import annotations

from typing import Any


def pca_2d(x: Any) -> tuple[Any, list[float]]:
    """Rows of ``x`` projected on their first two principal components (numpy SVD of the centred
    matrix); returns ``(points [N, 2], explained variance ratios of the two components)``."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean(axis=0, keepdims=True)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    k = min(2, vt.shape[0])
    pts = xc @ vt[:k].T
    if k < 2:
        pts = np.concatenate([pts, np.zeros((pts.shape[0], 2 - k))], axis=1)
    var = s ** 2
    ratios = [float(v / var.sum()) if var.sum() > 0 else 0.0 for v in var[:2]]
    return pts, ratios


def tsne_2d(x: Any, *, perplexity: float = 10.0, iterations: int = 500, seed: int = 0) -> Any:
    """A small exact t-SNE (van der Maaten & Hinton 2008) in numpy, for up to a few hundred points:
    Gaussian affinities with per-point bandwidths found by bisection to match ``perplexity``
    (capped at (N − 1) / 3), symmetrised; Student-t similarities in 2-D; gradient descent (learning rate
    max(N / 12, 10)) with momentum 0.5 → 0.8, early exaggeration 4 for the first 100 iterations, per-parameter gains.
    Deterministic for a given ``seed``. Returns points [N, 2]."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 3:
        return np.zeros((n, 2))
    perp = max(1.0, min(perplexity, (n - 1) / 3.0))
    d = np.square(x[:, None, :] - x[None, :, :]).sum(-1)
    p = np.zeros((n, n))
    target = np.log(perp)
    for i in range(n):
        lo, hi, beta = 0.0, np.inf, 1.0
        di = np.delete(d[i], i)
        for _ in range(60):
            w = np.exp(-(di - di.min()) * beta)
            sw = w.sum()
            h = np.log(sw) + beta * float((di - di.min()) @ w) / sw
            if abs(h - target) < 1e-5:
                break
            if h > target:
                lo, beta = beta, beta * 2 if hi == np.inf else (beta + hi) / 2
            else:
                hi, beta = beta, (beta + lo) / 2
        p[i, np.arange(n) != i] = w / sw
    p = (p + p.T) / (2 * n)
    p = np.maximum(p, 1e-12)
    rng = np.random.default_rng(seed)
    y = rng.normal(scale=1e-4, size=(n, 2))
    vel = np.zeros_like(y)
    gains = np.ones_like(y)
    lr = max(n / 12.0, 10.0)  # "auto" learning rate of recent t-SNE implementations, N / exaggeration / 3
    for it in range(iterations):
        pe = p * 4.0 if it < 100 else p
        num = 1.0 / (1.0 + np.square(y[:, None, :] - y[None, :, :]).sum(-1))
        np.fill_diagonal(num, 0.0)
        q = np.maximum(num / num.sum(), 1e-12)
        grad = 4.0 * (((pe - q) * num)[:, :, None] * (y[:, None, :] - y[None, :, :])).sum(1)
        mom = 0.5 if it < 250 else 0.8
        gains = np.where(np.sign(grad) != np.sign(vel), gains + 0.2, gains * 0.8).clip(0.01)
        vel = mom * vel - lr * gains * grad
        y = y + vel
        y = y - y.mean(0)
    return y
