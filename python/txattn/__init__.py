# SPDX-License-Identifier: MIT
"""txattn: exact scaled-dot-product attention on the CPU, from NumPy arrays and torch tensors.

    import numpy as np, txattn
    q = np.random.randn(1, 8, 256, 64).astype(np.float32)     # [batch, heads, rows, dim]
    o = txattn.attention(q, q, q, causal=True)

A thin layer over libtxattn's C API (include/txattn/txattn.h): the same problem, the same kernels and
dispatcher, the same exactness contract. Tensors are used where they lie (strided views included,
never copied), every shape, type and length is checked before the library sees a pointer, and the
GIL is released while a kernel runs. docs/python.md is the guide.

Tensors are [batch, heads, rows, dim] (torch's and the C API's layout; a [batch, rows, heads, dim]
tensor passes as x.transpose(1, 2) without a copy): NumPy arrays and anything else with the buffer
protocol, torch CPU tensors, and any object with __dlpack__; float32, float16 and bfloat16 (which
NumPy lacks: torch tensors or DLPack carry it). Results are of q's kind: torch tensors for torch
tensors, NumPy arrays otherwise.

Threads: a call without context= runs on the default context, which uses torch.get_num_threads()
threads when torch has been imported (so txattn's OpenMP team is the size of torch's intra-op pool,
and the two never run at once: a call returns before torch goes on), else every CPU the process may
run on. Pass context=txattn.Context(threads=N) to choose, or set_default_context().
"""

import math as _math
import sys as _sys

from . import _txattn as _c
from ._txattn import (
    Error,
    FileError,
    InternalError,
    InvalidError,
    NotFoundError,
    OutOfMemoryError,
    Plan,
    PluginError,
    TableError,
    UnsupportedError,
    attention,
    default_context,
    error_bound,
    reference,
    set_default_context,
)

try:
    import numpy as _np
except ImportError:  # torch tensors need no NumPy
    _np = None

__all__ = [
    "attention",
    "scaled_dot_product_attention",
    "reference",
    "error_bound",
    "merge",
    "alibi_slopes",
    "quantize",
    "dequantize",
    "fp8_scale",
    "kernels",
    "Context",
    "Plan",
    "default_context",
    "set_default_context",
    "library_version",
    "models",
    "Error",
    "InvalidError",
    "UnsupportedError",
    "NotFoundError",
    "OutOfMemoryError",
    "PluginError",
    "TableError",
    "FileError",
    "InternalError",
]

__version__ = "0.2.0"

_ATTENTION, _PLAN = 0, 4  # the ops of _txattn._run
_NONE, _CAUSAL, _WINDOW = range(3)
_UNBOUNDED = -1


def library_version():
    """The libtxattn linked at run time: (txattn_version(), txattn_version_string()),
    e.g. (200, "0.2.0")."""
    return _c.version()


def models():
    """The catalogue of real models libtxattn carries (txattn_model_*, `txtune models`): a list
    of dicts, one per model, {"name", "title", "source", "note", "layers", "kinds"}, "kinds" a
    list of dicts, one per kind of attention layer: "kind", "layers", "heads_q", "heads_kv",
    "d_qk", "d_v", "mask" ("none", "causal", "window"), "window" ((left, right) or None),
    "scale", "softcap" (None: none), "alibi", "alibi_max_bias" (None without ALiBi), "sinks",
    "sink_keys", "n_q" and "n_kv" (fixed lengths; None: the tokens), "decode", "ragged",
    "relative_bias". docs/models.md says what each means."""
    return _c.models()


# ---- kinds of tensors ---------------------------------------------------------------------------


class _NumPyKind:
    """NumPy's side: arrays go to the extension through the buffer protocol."""

    @staticmethod
    def dtype_names():
        return {_np.dtype(_np.float32): "f32", _np.dtype(_np.float16): "f16"}

    @staticmethod
    def empty(shape, dtype, fill=None):
        if dtype == "bf16":
            raise ValueError(
                "NumPy has no bfloat16: a bfloat16 result needs torch tensors as inputs"
            )
        np_dtype = _np.float32 if dtype == "f32" else _np.float16
        if fill is None:
            return _np.empty(shape, np_dtype)
        return _np.full(shape, fill, np_dtype)

    @staticmethod
    def expand(x, shape):
        return _np.broadcast_to(x, shape)

    @staticmethod
    def view(x, shape):
        try:
            return x.reshape(shape, copy=False)  # NumPy 2.1+
        except TypeError:
            pass
        except ValueError:
            return None
        y = x.view()
        try:
            y.shape = shape  # refuses where a copy would be needed
        except AttributeError:
            return None
        return y

    @staticmethod
    def slice_rows(x, n):
        return x[..., :n, :]


_numpy_dtype_names = None
_torch_kind = None


def _torch_side():
    """txattn._torch, imported on first use."""
    global _torch_kind
    if _torch_kind is None:
        from . import _torch as t

        _torch_kind = t
    return _torch_kind


def _is_torch(x):
    t = _sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _as_tensor(x, name):
    """x as a NumPy array or torch tensor, without copying: any other object with the buffer
    protocol or __dlpack__ becomes a NumPy array over the same memory."""
    if _np is not None and isinstance(x, _np.ndarray):
        return x
    if _is_torch(x):
        return x
    if _np is None:
        raise TypeError(f"{name} must be a torch tensor (NumPy is not installed); got {type(x).__name__}")
    try:
        memoryview(x).release()
        return _np.asarray(x)
    except TypeError:
        pass
    if hasattr(x, "__dlpack__"):
        try:
            return _np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise ValueError(
                f"{name}: NumPy cannot hold this DLPack tensor ({e}); its results would be NumPy "
                f"arrays: for bfloat16, pass torch tensors (torch.from_dlpack({name}))"
            ) from None
    raise TypeError(
        f"{name} must be a NumPy array, a torch tensor or another object with the buffer protocol "
        f"or __dlpack__; got {type(x).__name__}"
    )


def _kind(x):
    return _torch_side() if _is_torch(x) else _NumPyKind


def _dtype_name(x, name):
    global _numpy_dtype_names
    if _is_torch(x):
        names = _torch_side().DTYPE_NAMES
    else:
        if _numpy_dtype_names is None:
            _numpy_dtype_names = _NumPyKind.dtype_names()
        names = _numpy_dtype_names
    d = names.get(x.dtype)
    if d is None:
        got = x.dtype
        if getattr(got, "byteorder", "=") == ">":
            got = f"{got.name} (big-endian)"
        raise ValueError(
            f"{name} has dtype {got}; txattn takes float32, float16 or bfloat16 (bfloat16 as "
            f"torch tensors): convert it, e.g. {name}.astype(np.float32) or {name}.float()"
        )
    return d


def _dtype_arg(dtype, name="dtype"):
    """A dtype given by name ("f32", "float16", "bf16"), NumPy dtype or torch dtype, as txattn's
    name for it."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        names = {"f32": "f32", "float32": "f32", "f16": "f16", "float16": "f16", "half": "f16",
                 "bf16": "bf16", "bfloat16": "bf16"}
        if dtype in names:
            return names[dtype]
    elif _is_torch_dtype(dtype):
        d = _torch_side().DTYPE_NAMES.get(dtype)
        if d is not None:
            return d
    elif _np is not None:
        try:
            d = _NumPyKind.dtype_names().get(_np.dtype(dtype))
        except TypeError:
            d = None
        if d is not None:
            return d
    raise ValueError(f"{name} = {dtype!r}: txattn takes float32, float16 or bfloat16")


def _is_torch_dtype(d):
    t = _sys.modules.get("torch")
    return t is not None and isinstance(d, t.dtype)


# ---- arguments ----------------------------------------------------------------------------------


def _side(x, what):
    if x is None:
        return _UNBOUNDED
    if isinstance(x, bool) or not isinstance(x, int):
        try:
            x = x.__index__()
        except AttributeError:
            raise TypeError(f"window {what} must be an int >= 0 or None; got {x!r}") from None
    if x < 0:
        raise ValueError(f"window {what} = {x}: give a count of keys >= 0, or None for unbounded")
    return x


def _mask(causal, window):
    """(mask, window_left, window_right) for the C API. causal with a window keeps the window's
    left side and clips its right side at the diagonal, as FlashAttention's window_size does."""
    if window is None:
        return (_CAUSAL if causal else _NONE), 0, 0
    try:
        left, right = window
    except (TypeError, ValueError):
        raise TypeError(f"window must be a pair (left, right); got {window!r}") from None
    left, right = _side(left, "left"), _side(right, "right")
    if causal:
        right = 0
    return _WINDOW, left, right


class Context(_c.Context):
    """The plugins loaded once, a thread count and a dispatch table: what every call runs in.

    Context(plugin_path=None, table=None, threads=0, caches=None)

    plugin_path: directories separated by ':'; None: $TXATTN_PLUGIN_PATH, else the plugins
        beside libtxattn. table: a dispatch table file; None: $TXATTN_TABLE, else
        ~/.cache/txtune/dispatch.json; "": none. threads: 0 for every CPU this process may run on.
    caches: cache sizes per core, "l1d=48K,l2=2M,l3=32M", instead of what hwloc reports.

    Attributes threads, table_status ("loaded", "none", "stale", "malformed"), table_state (in
    words) and table_path; kernels(), rejected() and machine() show what it found. Safe to share
    between threads. Calls without context= use default_context().
    """

    __slots__ = ()

    def plan(self, q, k, v, *, causal=False, window=None, scale=None, q_lens=None, kv_lens=None,
             ragged=False, return_lse=False, kernel=None, out_dtype=None, dtype=None,
             softcap=None, alibi_slopes=None, sinks=None, sink_keys=0, attn_mask=None,
             block_table=None, q_offsets=None, kv_dtype=None, k_scale=None, v_scale=None):
        """A Plan for one problem, to run many times: which kernel, why, and its tunables.

        q, k, v: tensors as attention() takes them, or shapes (tuples of ints) of type dtype
        (float32 by default; with kv_dtype, k and v are uint8 caches or their shapes in bytes).
        causal, window, scale, return_lse, kernel: as for attention().
        ragged=True makes a plan for ragged batches, whose calls take q_lens and kv_lens; lengths
        given here do that too and are the calls' default. out_dtype: the results' type (default
        q's). softcap, sink_keys: as for attention(), fixed in the plan. alibi_slopes, sinks: the
        heads_q values (copied here: the calls' default, which a call's alibi_slopes=/sinks=
        replaces), or True for a plan whose calls give them; None: the plan has none.
        attn_mask: a mask as attention() takes it (held: the calls' default, which a call's
        attn_mask= replaces), or its dtype (bool, float32, float16, bfloat16, by name, NumPy or
        torch) for a plan whose calls give one; the plan takes masks of that kind and type.
        KV caches as servers keep them, as attention() takes them: kv_dtype ('q8_0', 'e4m3',
        'e5m2', 'q4_0') is fixed in the plan; k_scale, v_scale (fp8): the scales (held: the calls'
        default) or True for calls that give them. block_table: a table (held: the calls'
        default; its width is the plan's max_pages) or its shape (batch, max_pages) for calls
        that give one; k and v are then page pools. q_offsets: offsets (held: the calls'
        default) or True for calls that give them; q is then packed [rows, heads, dim], and a
        call's sequences may have at most as many rows as the longest here (True: q's rows),
        in any total.
        """
        qs = _spec(q, "q", dtype)
        ks, vs = (_spec(x, n, dtype, kv_dtype) for x, n in ((k, "k"), (v, "v")))
        o_dtype = _dtype_arg(out_dtype, "out_dtype") or qs[1]
        mask, left, right = _mask(causal, window)
        is_ragged = bool(ragged) or q_lens is not None or kv_lens is not None
        # the results' shape: q's rows and v's dim in values (the extension checks q and v first)
        d_v = tuple(n // _BLOCK_BYTES[kv_dtype] * 32 if kv_dtype in _BLOCK_BYTES else n
                    for n in vs[0][-1:])
        spec_o = (qs[0][:-1] + d_v, o_dtype)
        if is_ragged and q_lens is None and q_offsets is None:  # packed: the offsets say the rows
            q_lens = True
        return _c._run(_PLAN, self, qs, ks, vs, spec_o, bool(return_lse), mask, left, right,
                       scale, q_lens, kv_lens, kernel, None, _mask_kind(attn_mask),
                       (softcap, alibi_slopes, sinks, sink_keys),
                       (block_table, q_offsets, kv_dtype, k_scale, v_scale))

    def __repr__(self):
        return f"txattn.Context(threads={self.threads}, table={self.table_status!r})"


_c._register(Context)


def _mask_kind(m):
    """A plan's attn_mask: a tensor as it is, a dtype as txattn's name for it ("bool" too)."""
    if m is None or not (isinstance(m, (str, type)) or _is_torch_dtype(m) or
                         (_np is not None and isinstance(m, _np.dtype))):
        return m
    if m in ("bool", bool) or (_np is not None and not _is_torch_dtype(m) and
                               not isinstance(m, str) and _np.dtype(m) == _np.bool_):
        return "bool"
    if _is_torch_dtype(m) and m is _sys.modules["torch"].bool:
        return "bool"
    return _dtype_arg(m, "attn_mask")


def _spec(x, name, dtype, kv_dtype=None):
    """(shape, dtype name) of a tensor or of a shape tuple; with kv_dtype, of a uint8 cache."""
    if isinstance(x, (tuple, list)) and all(isinstance(n, int) for n in x):
        return tuple(x), "u8" if kv_dtype is not None else _dtype_arg(dtype) or "f32"
    if kv_dtype is not None:
        if kv_dtype not in _KV8:
            raise ValueError("kv_dtype must be None, 'q8_0', 'e4m3', 'e5m2' or 'q4_0'; "
                             f"got {kv_dtype!r}")
        x = _as_tensor(x, name)
        if str(x.dtype) not in ("uint8", "torch.uint8"):
            raise ValueError(f"{name} must be a uint8 array holding the {kv_dtype} cache "
                             f"(txattn.quantize makes one), not {x.dtype}")
        return tuple(x.shape), "u8"
    if not _is_torch(x) and not (_np is not None and isinstance(x, _np.ndarray)):
        return _c._spec(x, name)  # read by the extension: bfloat16 through DLPack too
    return tuple(x.shape), _dtype_name(x, name)


def merge(outputs, lses, *, q_lens=None, out=None, sinks=None):
    """Combines attention over disjoint sets of keys into the attention over all of them
    (txattn_merge), as the online softmax does: per row, L = log(sum_i exp(lse_i)) and
    o = sum_i exp(lse_i - L) o_i.

    outputs: the parts' o, each [batch, heads, rows, d_v] of one dtype; lses: their lse
    (attention(..., return_lse=True)), each [batch, heads, rows] float32. q_lens: a ragged
    batch's rows per sequence. out: o, or (o, lse), to write into (o may be outputs[0]).
    sinks: the heads sink logits of the whole (as attention() takes them), applied once here:
    o *= 1 / (1 + exp(t_h - L)), lse stays L; the parts are computed without sinks.
    Returns (o, lse) of the kind of outputs[0].
    """
    outputs, lses = list(outputs), list(lses)  # the extension reads them (DLPack's bfloat16 too)
    if not outputs:
        raise ValueError("merge needs at least one part")
    if out is None:
        first = _as_tensor(outputs[0], "outputs[0]")
        if first.ndim != 4:
            raise ValueError(f"outputs[0] must be 4-D [batch, heads, rows, dim]; got shape "
                             f"{tuple(first.shape)}")
        kind = _kind(first)
        ragged = q_lens is not None
        o = kind.empty(tuple(first.shape), _dtype_name(first, "outputs[0]"), 0.0 if ragged else None)
        lse = kind.empty(tuple(first.shape[:3]), "f32", -_math.inf if ragged else None)
    elif isinstance(out, (tuple, list)):
        o, lse = out
    else:
        o, lse = out, None
    _c._merge(outputs, lses, o, lse, q_lens, sinks)
    return o, lse


def alibi_slopes(heads, max_bias=8.0):
    """The standard ALiBi slopes of heads query heads (txattn_alibi_slopes), as llama.cpp (ggml)
    computes them from max_bias (the ALiBi paper's 8): with n = 2^floor(log2(heads)), head h < n
    gets 2^(-max_bias (h + 1) / n), head h >= n 2^(-max_bias (2 (h - n) + 1) / (2 n)).

    Returns a NumPy float32 array of heads slopes (a list of floats without NumPy), for
    attention(..., alibi_slopes=...). heads >= 1; max_bias finite and >= 0.
    """
    slopes = _c._alibi_slopes(heads, max_bias)
    return slopes if _np is None else _np.array(slopes, dtype=_np.float32)


# ---- 8-bit and 4-bit K/V caches ------------------------------------------------------------------

_KV8 = {"q8_0": 3, "e4m3": 4, "e5m2": 5, "q4_0": 6}  # txattn_dtype numbers
_BLOCK_BYTES = {"q8_0": 34, "q4_0": 18}  # ggml's blocks of 32 values
_F32, _F16 = 0, 1


def _kv8_code(dtype):
    if dtype not in _KV8:
        raise ValueError("dtype must be 'q8_0', 'e4m3', 'e5m2' or 'q4_0'; got %r" % (dtype,))
    return _KV8[dtype]


def _host_array(x, name):
    """x as a C-contiguous NumPy array (a torch tensor through .numpy(), bfloat16 widened to
    float32, which holds it exactly), and whether it was a torch tensor."""
    if _is_torch(x):
        import torch

        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return _np.ascontiguousarray(t.numpy()), True
    if _np is None:
        raise ValueError("%s: quantize and dequantize need NumPy or torch tensors" % name)
    return _np.ascontiguousarray(x), False


def quantize(x, dtype, scale=1.0):
    """The 8-bit (4-bit) cache of x (float32, float16 or bfloat16 values; rows along the last
    dimension) as txattn.attention(..., kv_dtype=dtype) reads it: a uint8 array (a torch tensor
    for a torch x) of x's shape, but for q8_0 a last dimension of d / 32 * 34 bytes (ggml's
    blocks: an f16 scale and 32 int8, quantised as ggml's quantize_row_q8_0 does; d a multiple
    of 32) and for q4_0 of d / 32 * 18 bytes (an f16 scale and 32 nibbles, as
    quantize_row_q4_0). For 'e4m3' and 'e5m2' each value is x / scale rounded to nearest even, saturating
    at the largest finite value (448, 57344) as vLLM's cast does; give the same scale as
    k_scale / v_scale (fp8_scale(x, dtype) computes vLLM's amax / 448). txattn_convert."""
    code = _kv8_code(dtype)
    a, torch_out = _host_array(x, "x")
    if a.dtype == _np.float32:
        src = _F32
    elif a.dtype == _np.float16:
        src = _F16
    else:
        raise ValueError("x has dtype %s; quantize takes float32, float16 or bfloat16" % a.dtype)
    shape = a.shape
    if dtype in _BLOCK_BYTES:
        if a.ndim == 0 or shape[-1] % 32:
            raise ValueError("%s rows are blocks of 32: x's last dimension %s is not a multiple "
                             "of 32" % (dtype, shape[-1:] or "(none)"))
        shape = shape[:-1] + (shape[-1] // 32 * _BLOCK_BYTES[dtype],)
    out = _np.empty(shape, _np.uint8)
    _c._convert(a, out, src, code, 1.0 if dtype in _BLOCK_BYTES else float(scale))
    if torch_out:
        import torch

        return torch.from_numpy(out)
    return out


def dequantize(data, dtype, scale=1.0, out_dtype=None):
    """The values an 8-bit or 4-bit cache (uint8, as quantize makes it) holds, as the kernels
    compute on them: q8_0's q * d and q4_0's (q - 8) * d exactly, an fp8 value times scale rounded to float32 once; float32 (or
    float16 with out_dtype=numpy.float16). A NumPy array, or a torch tensor for torch data."""
    code = _kv8_code(dtype)
    a, torch_out = _host_array(data, "data")
    if a.dtype != _np.uint8:
        raise ValueError("data has dtype %s; an 8-bit or 4-bit cache is uint8" % a.dtype)
    shape = a.shape
    if dtype in _BLOCK_BYTES:
        bb = _BLOCK_BYTES[dtype]
        if a.ndim == 0 or shape[-1] % bb:
            raise ValueError("%s rows are %d-byte blocks: data's last dimension %s is not"
                             % (dtype, bb, shape[-1:] or "(none)"))
        shape = shape[:-1] + (shape[-1] // bb * 32,)
    np_out = _np.dtype(out_dtype if out_dtype is not None else _np.float32)
    if np_out not in (_np.dtype(_np.float32), _np.dtype(_np.float16)):
        raise ValueError("out_dtype must be float32 or float16")
    out = _np.empty(shape, np_out)
    dst = _F32 if np_out == _np.float32 else _F16
    _c._convert(a, out, code, dst, 1.0 if dtype in _BLOCK_BYTES else float(scale))
    if torch_out:
        import torch

        return torch.from_numpy(out)
    return out


def fp8_scale(x, dtype="e4m3"):
    """vLLM's dynamic fp8 scale of x: max |x| / 448 ('e4m3') or / 57344 ('e5m2') in float32,
    no smaller than the least scale txattn takes, 1.0 for an all-zero x (txattn_convert_scale).
    """
    code = _kv8_code(dtype)
    if dtype in _BLOCK_BYTES:
        raise ValueError("%s needs no scale: its blocks carry their own" % dtype)
    a, _ = _host_array(x, "x")
    src = _F32 if a.dtype == _np.float32 else _F16 if a.dtype == _np.float16 else None
    if src is None:
        raise ValueError("x has dtype %s; fp8_scale takes float32, float16 or bfloat16" % a.dtype)
    return _c._convert_scale(a, src, code)


def kernels(context=None):
    """The kernels found, as `txtune list` shows them (Context.kernels of context, or of the
    default context): a list of dicts."""
    if context is None:
        return default_context().kernels()
    return context.kernels()


# ---- torch's scaled_dot_product_attention -------------------------------------------------------


def _broadcast(shapes, what):
    """numpy/torch broadcasting of the leading shapes, or ValueError naming them."""
    n = max(len(s) for s in shapes)
    result = []
    for i in range(n):
        sizes = {s[len(s) - n + i] for s in shapes if len(s) - n + i >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"{what} do not broadcast: {', '.join(str(tuple(s)) for s in shapes)}")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def _as4(kind, x, name, batch, heads, rows_dim):
    """x viewed as [prod(batch), heads, rows, dim], broadcast (stride 0) where its leading sizes
    are 1, without copying; ValueError where its strides cannot say that."""
    full = tuple(batch) + (heads,) + tuple(rows_dim)
    lead = tuple(x.shape[:-2])
    # align x's leading dims with batch + (heads,): missing ones are 1
    want = (1,) * (len(full) - 2 - len(lead)) + lead
    if len(want) != len(lead):
        x = kind.view(x, want + tuple(x.shape[-2:]))  # leading 1s: always a view
    if tuple(x.shape) != full:
        x = kind.expand(x, full)
    nb = 1
    for b in batch:
        nb *= b
    y = kind.view(x, (nb, heads) + tuple(rows_dim))
    if y is None:
        raise ValueError(
            f"{name} (shape {tuple(x.shape)}) cannot be addressed as [batch, heads, rows, dim] "
            f"without a copy: its batch dimensions' strides do not combine into one; make it "
            f"contiguous first ({name}.contiguous())"
        )
    return y


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention on CPU tensors, computed by txattn:
    softmax(query @ key^T * scale) @ value with torch's semantics (torch 2.5's signature).

    query (..., L, E), key (..., S, E), value (..., S, Ev): torch tensors (float32, float16,
    bfloat16; one dtype) or NumPy arrays; leading dimensions broadcast as torch's matmul does.
    is_causal: torch's top-left causal mask (key j visible to query i when j <= i), also when
    L != S. scale: None for 1/sqrt(E). enable_gqa: query heads (dim -3) a multiple of the key and
    value heads, each key/value head serving consecutive query heads, as repeat_interleave does.

    attn_mask: torch's, broadcastable to (..., L, S) as torch broadcasts it: boolean (True: the key
    takes part) or floating (float32, float16, bfloat16; added to the scores, -inf hides the key),
    read in place (broadcast dimensions as stride 0, no copy). A row that sees no key gets zeros,
    as torch 2.5's math path gives them. Given with is_causal=True, it is refused, as torch
    refuses it.

    Refused, never ignored: dropout_p other than 0 (ValueError), tensors that require grad while
    grad mode is on. Rows that see a NaN through a masked-out key stay finite here, where torch's
    math makes them NaN.
    """
    if attn_mask is not None and is_causal:
        raise ValueError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True (as torch says): fold the causal mask into attn_mask"
        )
    if dropout_p != 0.0:
        raise ValueError(
            f"dropout_p = {dropout_p}: txattn computes attention exactly, without dropout; "
            f"pass dropout_p=0.0 (inference)"
        )
    query, key, value = (_as_tensor(x, n) for x, n in ((query, "query"), (key, "key"), (value, "value")))
    kinds = {_is_torch(x) for x in (query, key, value)}
    if len(kinds) != 1:
        raise TypeError("query, key and value must be all torch tensors or all NumPy arrays")
    kind = _kind(query)
    dtypes = [_dtype_name(x, n) for x, n in ((query, "query"), (key, "key"), (value, "value"))]
    if len(set(dtypes)) != 1:
        raise ValueError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype}, key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
    for x, n in ((query, "query"), (key, "key"), (value, "value")):
        if x.ndim < 2:
            raise ValueError(f"{n} must be at least 2-D (..., rows, dim); got shape {tuple(x.shape)}")
    L, E = query.shape[-2], query.shape[-1]
    S, Ev = key.shape[-2], value.shape[-1]
    if key.shape[-1] != E:
        raise ValueError(f"key has dim {key.shape[-1]} but query has {E}: query {tuple(query.shape)}, "
                         f"key {tuple(key.shape)}")
    if value.shape[-2] != S:
        raise ValueError(f"value has {value.shape[-2]} rows but key has {S}: key {tuple(key.shape)}, "
                         f"value {tuple(value.shape)}")

    def heads(x):
        return x.shape[-3] if x.ndim >= 3 else 1

    def batch_of(x):
        return tuple(x.shape[:-3])

    hq, hk, hv = heads(query), heads(key), heads(value)
    if enable_gqa:
        for x, n in ((query, "query"), (key, "key"), (value, "value")):
            if x.ndim < 3:
                raise ValueError(f"enable_gqa needs a heads dimension (-3) in {n}; got shape "
                                 f"{tuple(x.shape)}")
        if hk != hv or hk == 0 or hq % hk != 0:
            raise ValueError(
                f"enable_gqa: the query heads ({hq}) must be a multiple of the key heads ({hk}), "
                f"and the key and value heads must be equal ({hk}, {hv}): query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        H, hkv = hq, hk
        batch = _broadcast([batch_of(query), batch_of(key), batch_of(value)],
                           "the batch dimensions of query, key and value")
    else:
        lead = _broadcast([tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2])],
                          "the leading dimensions of query, key and value (without enable_gqa, "
                          "head counts must be equal or 1)")
        H = lead[-1] if lead else 1
        batch = lead[:-1]
        # one key/value head serving every query head is GQA's heads_kv = 1, no broadcast needed
        hkv = 1 if hk == 1 and hv == 1 else H
    has_heads = any(x.ndim >= 3 for x in (query, key, value))
    out_shape = (batch + (H,) if has_heads else ()) + (L, Ev)

    mask, left, right = _NONE, 0, 0
    if is_causal:
        if L <= S:
            # keys past L - 1 are visible to no row of a top-left causal mask: drop them (a view)
            key, value = kind.slice_rows(key, L), kind.slice_rows(value, L)
            S = L
            mask = _CAUSAL
        else:
            # j <= i is the bottom-right window reaching L - S past the diagonal
            mask, left, right = _WINDOW, _UNBOUNDED, L - S
    q4 = _as4(kind, query, "query", batch, H, (L, E))
    k4 = _as4(kind, key, "key", batch, hkv, (S, E))
    v4 = _as4(kind, value, "value", batch, hkv, (S, Ev))
    m4 = None
    if attn_mask is not None:
        attn_mask = _as_tensor(attn_mask, "attn_mask")
        if _is_torch(attn_mask) != _is_torch(query):
            raise TypeError("attn_mask must be of query's kind (a torch tensor or a NumPy array)")
        if attn_mask.ndim < 2:  # torch broadcasts (S,) and () over rows too
            attn_mask = kind.view(attn_mask, (1,) * (2 - attn_mask.ndim) + tuple(attn_mask.shape))
        lead = tuple(attn_mask.shape[:-2])
        if len(lead) > len(batch) + 1:
            if any(x != 1 for x in lead[: len(lead) - len(batch) - 1]):
                raise ValueError(f"attn_mask (shape {tuple(attn_mask.shape)}) does not broadcast to "
                                 f"{tuple(batch) + (H, L, S)}")
            attn_mask = kind.view(attn_mask, lead[len(lead) - len(batch) - 1:] +
                                  tuple(attn_mask.shape[-2:]))
        try:
            m4 = _as4(kind, attn_mask, "attn_mask", batch, H, (L, S))
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"attn_mask (shape {tuple(attn_mask.shape)}) does not broadcast to "
                             f"{tuple(batch) + (H, L, S)}: {e}") from None
    out = kind.empty(out_shape, dtypes[0])
    o4 = kind.view(out, tuple(q4.shape[:3]) + (Ev,))
    _c._run(_ATTENTION, None, q4, k4, v4, o4, None, mask, left, right, scale, None, None, None,
            ("query", "key", "value"), m4, None, None)
    return out
