"""An `--inputs` file's q, k and v shapes, read without torch (a safetensors header, the .npy
headers, torch.save's pickle read for its tensors' sizes alone), and whether they are the
configured shape's: the CLI refuses a file whose shapes are not before a runner starts, and the
runner checks the tensors it loads by the same rule."""

from __future__ import annotations

import io
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from sagetui.core.capture.tensor_file import TensorFileError, read_header, read_metadata
from sagetui.core.config import Shape

NAMES = ("q", "k", "v")


def stored_shapes(path: Path) -> dict[str, list[int]] | None:
    """q, k and v's shapes as the file stores them; None where the file is not one this reads
    (the runner, loading it, says why)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".safetensors":
            stored = read_header(path)
            return {n: stored[n].shape for n in NAMES}
        if suffix == ".npy":
            with path.open("rb") as fh:
                stacked = _npy_shape(fh)
            return {n: stacked[1:] for n in NAMES} if stacked[:1] == [3] else None
        if suffix == ".npz":
            with zipfile.ZipFile(path) as z:
                return {n: _npy_shape(z.open(f"{n}.npy")) for n in NAMES}
        if suffix in (".pt", ".pth"):
            return _torch_shapes(path)
    except (OSError, KeyError, ValueError, TypeError, TensorFileError, zipfile.BadZipFile,
            pickle.UnpicklingError, EOFError):
        return None
    return None


MAX_PICKLE = 16 << 20  # a dict of three tensors pickles to a few hundred bytes


class _Sizes(pickle.Unpickler):
    """torch.save's data.pkl read for its tensors' sizes alone: a tensor is rebuilt as its
    size, a storage as nothing, and any other global is refused (nothing the file names runs:
    the rest is judged by the runner's torch.load(weights_only=True))."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return lambda _storage, _offset, size, *_rest: [int(d) for d in size]
        if (module, name) == ("collections", "OrderedDict"):
            return dict
        if module == "torch" and name.endswith("Storage"):
            return None  # named in a storage's persistent id only
        raise pickle.UnpicklingError(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> None:
        return None


def _torch_shapes(path: Path) -> dict[str, list[int]] | None:
    with zipfile.ZipFile(path) as z:
        info = next((i for i in z.infolist() if i.filename.endswith("/data.pkl")), None)
        if info is None or info.file_size > MAX_PICKLE:
            return None
        tensors = _Sizes(io.BytesIO(z.read(info))).load()
    return {n: tensors[n] for n in NAMES} if isinstance(tensors, dict) \
        and all(isinstance(tensors.get(n), list) for n in NAMES) else None


def _npy_shape(fh: IO[bytes]) -> list[int]:
    """An array's shape from its header; ValueError for an array of objects (pickles: the
    runner refuses them, saying so)."""
    version = np.lib.format.read_magic(fh)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read(fh)
    if dtype.hasobject:
        raise ValueError("an array of Python objects")
    return [int(d) for d in shape]


def shape_mismatch(shapes: Mapping[str, list[int]], shape: Shape) -> str | None:
    """'q has shape [...], the configuration says [...]' for the first of q, k and v that is not
    the configured shape's, else None. A captured sageattn_varlen call's [tokens, H, D] is
    its [1, tokens, H, D] (the runner adds the batch)."""
    want = shape.tensor_shapes()
    for n in NAMES:
        got = list(shapes[n])
        if shape.seqlens is not None and len(got) == 3:
            got = [1, *got]
        if got != want[f"{n}_shape"]:
            return f"{n} has shape {got}, the configuration says {want[f'{n}_shape']}"
    return None


def layout_hint(path: Path, shapes: Mapping[str, list[int]], shape: Shape) -> str:
    """'; it holds them in HND (a captured scaled_dot_product_attention call's): add --layout
    HND' where the tensors are the configured shape in the other layout, else ''."""
    other = "HND" if shape.layout == "NHD" else "NHD"
    if shape_mismatch(shapes, shape.model_copy(update={"layout": other})) is not None:
        return ""
    function = read_metadata(path).get("function") if path.suffix.lower() == ".safetensors" \
        else None
    whose = f" (a captured {function.rsplit('.', 1)[-1]} call's)" if function else ""
    return f"; it holds them in {other}{whose}: add --layout {other}"
