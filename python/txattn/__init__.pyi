# SPDX-License-Identifier: MIT
"""Type stubs of txattn (docs/python.md): tensors are NumPy arrays or torch CPU tensors (any object
with the buffer protocol or __dlpack__), results of the kind given."""

import os
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, TypeVar, Union, overload


Tensor = TypeVar("Tensor")  # numpy.ndarray or torch.Tensor: results are of q's kind
Lengths = Optional[Sequence[int]]
Window = Optional[Tuple[Optional[int], Optional[int]]]
DType = Union[str, Any]  # "f32" | "f16" | "bf16", a NumPy dtype or a torch dtype
Shape = Tuple[int, int, int, int]
HeadFloats = Optional[Any]  # heads_q real numbers: a 1-D NumPy array, torch tensor or sequence

__version__: str

class Error(Exception):
    """A libtxattn status other than TXATTN_OK."""

    status: str  # "TXATTN_E_INVALID"
    code: int
    message: str  # txattn_last_error()

class InvalidError(Error, ValueError): ...
class UnsupportedError(Error): ...
class NotFoundError(Error, LookupError): ...
class OutOfMemoryError(Error, MemoryError): ...
class PluginError(Error): ...
class TableError(Error): ...
class FileError(Error): ...
class InternalError(Error): ...

def library_version() -> Tuple[int, str]: ...
def models() -> List[Dict[str, Any]]: ...

class Context:
    def __init__(
        self,
        plugin_path: Optional[Union[str, os.PathLike]] = ...,
        table: Optional[Union[str, os.PathLike]] = ...,
        threads: int = ...,
        caches: Optional[str] = ...,
    ) -> None: ...
    @property
    def threads(self) -> int: ...
    @property
    def table_status(self) -> Literal["loaded", "none", "stale", "malformed"]: ...
    @property
    def table_state(self) -> str: ...
    @property
    def table_path(self) -> str: ...
    def kernels(self) -> List[Dict[str, Any]]: ...
    def rejected(self) -> List[Dict[str, str]]: ...
    def machine(self) -> Dict[str, Any]: ...
    def plan(
        self,
        q: Union[Any, Shape],
        k: Union[Any, Shape],
        v: Union[Any, Shape],
        *,
        causal: bool = ...,
        window: Window = ...,
        scale: Optional[float] = ...,
        q_lens: Lengths = ...,
        kv_lens: Lengths = ...,
        ragged: bool = ...,
        return_lse: bool = ...,
        kernel: Optional[str] = ...,
        out_dtype: Optional[DType] = ...,
        dtype: Optional[DType] = ...,
        softcap: Optional[float] = ...,
        alibi_slopes: Union[HeadFloats, bool] = ...,
        sinks: Union[HeadFloats, bool] = ...,
        sink_keys: int = ...,
        attn_mask: Optional[Union[Any, DType]] = ...,
        block_table: Optional[Union[Any, Tuple[int, int]]] = ...,
        q_offsets: Union[Lengths, bool] = ...,
        kv_dtype: Optional[str] = ...,
        k_scale: Union[HeadFloats, float, bool] = ...,
        v_scale: Union[HeadFloats, float, bool] = ...,
    ) -> "Plan": ...

class Plan:
    @property
    def context(self) -> Context: ...
    def __call__(
        self,
        q: Tensor,
        k: Any,
        v: Any,
        *,
        q_lens: Lengths = ...,
        kv_lens: Lengths = ...,
        out: Any = ...,
        alibi_slopes: HeadFloats = ...,
        sinks: HeadFloats = ...,
        attn_mask: Optional[Any] = ...,
        block_table: Optional[Any] = ...,
        q_offsets: Lengths = ...,
        k_scale: Union[HeadFloats, float] = ...,
        v_scale: Union[HeadFloats, float] = ...,
    ) -> Union[Tensor, Tuple[Tensor, Tensor]]: ...
    @property
    def kernel(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def failed(self) -> List[Tuple[str, str]]: ...
    @property
    def description(self) -> str: ...
    @property
    def tunables(self) -> Dict[str, int]: ...
    @property
    def problem(self) -> Dict[str, Any]: ...

def default_context() -> Context: ...
def set_default_context(context: Optional[Context]) -> None: ...
@overload
def attention(
    q: Tensor,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[False] = ...,
    out: Optional[Any] = ...,
    kernel: Optional[str] = ...,
    context: Optional[Context] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> Tensor: ...
@overload
def attention(
    q: Tensor,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[True],
    out: Optional[Tuple[Any, Any]] = ...,
    kernel: Optional[str] = ...,
    context: Optional[Context] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> Tuple[Tensor, Tensor]: ...
@overload
def reference(
    q: Tensor,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[False] = ...,
    out: Optional[Any] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> Tensor: ...
@overload
def reference(
    q: Tensor,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[True],
    out: Optional[Tuple[Any, Any]] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> Tuple[Tensor, Tensor]: ...
@overload
def error_bound(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[False] = ...,
    out: Optional[Any] = ...,
    out_dtype: Optional[DType] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> float: ...
@overload
def error_bound(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = ...,
    window: Window = ...,
    scale: Optional[float] = ...,
    kv_lens: Lengths = ...,
    q_lens: Lengths = ...,
    attn_mask: Optional[Any] = ...,
    return_lse: Literal[True],
    out: Optional[Any] = ...,
    out_dtype: Optional[DType] = ...,
    softcap: Optional[float] = ...,
    alibi_slopes: HeadFloats = ...,
    sinks: HeadFloats = ...,
    sink_keys: int = ...,
    block_table: Optional[Any] = ...,
    q_offsets: Lengths = ...,
    kv_dtype: Optional[str] = ...,
    k_scale: HeadFloats = ...,
    v_scale: HeadFloats = ...,
) -> Tuple[float, float, float]: ...
def merge(
    outputs: Sequence[Tensor],
    lses: Sequence[Any],
    *,
    q_lens: Lengths = ...,
    out: Optional[Any] = ...,
    sinks: HeadFloats = ...,
) -> Tuple[Tensor, Optional[Tensor]]: ...
def alibi_slopes(heads: int, max_bias: float = ...) -> Any: ...  # numpy.ndarray of float32
def quantize(x: Tensor, dtype: str, scale: float = ...) -> Any: ...  # uint8 array or tensor
def dequantize(data: Any, dtype: str, scale: float = ..., out_dtype: Any = ...) -> Tensor: ...
def fp8_scale(x: Tensor, dtype: str = ...) -> float: ...
def kernels(context: Optional[Context] = ...) -> List[Dict[str, Any]]: ...
def scaled_dot_product_attention(
    query: Tensor,
    key: Any,
    value: Any,
    attn_mask: Optional[Any] = ...,
    dropout_p: float = ...,
    is_causal: bool = ...,
    scale: Optional[float] = ...,
    enable_gqa: bool = ...,
) -> Tensor: ...
