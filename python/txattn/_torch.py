# SPDX-License-Identifier: MIT
"""torch's side of txattn: tensors handed to the extension as DLPack capsules, outputs allocated as
torch tensors. Imported only once a torch tensor is seen, so that NumPy users never import torch."""

import torch
from torch.utils.dlpack import to_dlpack

Tensor = torch.Tensor

DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


def check(x, name):
    """Refuses what the extension could not see through DLPack, in torch's words."""
    if x.device.type != "cpu":
        raise ValueError(f"{name} is on {x.device}: txattn runs on the CPU; move it with .cpu()")
    if x.requires_grad and torch.is_grad_enabled():
        raise ValueError(
            f"{name} requires grad, and txattn computes no gradients: call it under "
            f"torch.no_grad() or torch.inference_mode(), or pass {name}.detach()"
        )


def export(x, name):
    """x as a DLPack capsule for the extension (which checks dtype, shape and strides)."""
    check(x, name)
    return to_dlpack(x)


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


def threads():
    return torch.get_num_threads()


def lens(x):
    return x.tolist() if isinstance(x, torch.Tensor) else x
