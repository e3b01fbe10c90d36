# SPDX-License-Identifier: MIT
"""torch's side of the package's Python half (merge, scaled_dot_product_attention): results
allocated as torch tensors, views without copies. Imported only once a torch tensor is seen, so
that NumPy users never import torch; the extension takes torch tensors through DLPack itself."""

import torch

Tensor = torch.Tensor

DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


def empty(shape, dtype, fill=None):
    """A new contiguous tensor; fill: None (uninitialised), 0.0 or -inf."""
    if fill is None:
        return torch.empty(shape, dtype=DTYPES[dtype])
    return torch.full(shape, fill, dtype=DTYPES[dtype])


def expand(x, shape):
    return x.expand(shape)


def view(x, shape):
    """x with shape without copying, or None where its strides cannot say it."""
    try:
        return x.view(shape)
    except RuntimeError:
        return None


def slice_rows(x, n):
    return x[..., :n, :]
