"""What went wrong in a profile pass, as one line that says how to fix it. Pure: reads the text
that ncu printed; the driver (session/profile_pass.py) raises ProfileError with it."""

from __future__ import annotations

import re


class ProfileError(Exception):
    """A profile pass that cannot give a breakdown; str() is the one line to show."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


NO_NCU = ("ncu (Nsight Compute) is not on PATH: install Nsight Compute, or put the folder "
          "holding ncu on PATH")
NO_LINE_INFO = ("{function} in {module} has no line information: rebuild SageAttention with "
                "NVCC_APPEND_FLAGS=-lineinfo (its SASS is unchanged)")


def ncu_failure(output: str, *, kernel: str, nvtx: str) -> ProfileError | None:
    """The failure ncu's output names, or None when it profiled something."""
    if "ERR_NVGPUCTRPERM" in output:
        return ProfileError("counters_not_permitted",
                            "ncu may not read this GPU's performance counters "
                            "(ERR_NVGPUCTRPERM): run as root, or load the NVIDIA driver with "
                            "NVreg_RestrictProfilingToAdminUsers=0 "
                            "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "LibraryNotLoaded" in output:
        line = _line_with(output, "LibraryNotLoaded")
        return ProfileError("library_not_loaded",
                            f"ncu could not load its profiling library ({line}): use an Nsight "
                            "Compute release that supports this driver, and check its "
                            "installation")
    if re.search(r"No kernels were profiled", output):
        return ProfileError("kernel_not_found",
                            f"ncu profiled no kernel named {kernel} inside the NVTX range "
                            f"{nvtx}/: the call ran another kernel (check the backend and "
                            "its options) or no NVTX range was seen")
    m = re.search(r"==ERROR==\s*(.+)", output)
    if m:
        return ProfileError("ncu_error", f"ncu failed: {m.group(1).strip()}")
    return None


def _line_with(text: str, word: str) -> str:
    line = next((ln for ln in text.splitlines() if word in ln), word)
    return line.replace("==ERROR==", "").strip()[:200]
