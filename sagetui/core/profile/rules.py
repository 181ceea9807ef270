"""The attribution rules, in one place: which phase of the fused main loop a statement of the
kernel's own source belongs to, per kernel family (sm89, sm90, sm80; plus the project's toy
kernel that the tests record).

An instruction is placed by the statement at its outermost inline frame (the line in the
kernel's body that the inlined helpers were called from). A statement is matched by the names
it calls or uses, never by its line number: the first rule whose pattern matches its text, in
the table's order, decides. A statement that no rule matches is `unattributed` and reported as
such. Regions: `prologue` is the body before the main loop's header, `epilogue` from the first
`normalize_d` call on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PHASES = ("int8_qk", "scale_application", "online_softmax", "pv_accumulation",
          "final_normalization_and_output", "loads_and_pipeline", "setup")
UNATTRIBUTED = "unattributed"
# the five phases the phase-breakdown report names inside the kernel; the last two are sagetui's
REFERENCE_PHASES = PHASES[:5]


@dataclass(frozen=True)
class Rule:
    phase: str
    pattern: str  # searched in the statement's text
    region: str = "any"  # any, prologue, loop, epilogue
    # the phase of the nearest statement placed in one of these phases instead, looking
    # forward (direction 1) or back (-1): a wgmma fence belongs to the product it fences
    nearest: tuple[str, ...] = ()
    direction: int = 1
    # the phase of the next statement placed by a direct rule: a loop header or a branch is
    # the work of the body it opens
    follow: bool = False


@dataclass(frozen=True)
class Family:
    name: str
    kernel: str  # the __global__ function's name
    file: str  # the kernel's source file name (its last path part)
    module: str  # the extension module (or program) whose cubins hold it
    rules: tuple[Rule, ...]
    loop: str = r"^for \( ?(?:uint32_t|int|unsigned) iter\b"
    epilogue: str = r"\bnormalize_d\b"

    def compiled(self) -> list[tuple[Rule, re.Pattern[str]]]:
        return [(r, re.compile(r.pattern)) for r in self.rules]


QK = Rule("int8_qk", r"\bcompute_int_qk\b|\bwgmma_s8s8s32\b|\bsQ_local\b")
SOFTMAX = Rule("online_softmax", r"\bupdate_mdo\b|\baccumulate_d\w*|\bapply_\w*mask\b"
               r"|\bis_out_of_bounds\b|\b[qk]_idx\b|^d\[fq\]\[[01]\] \+="
               r"|^RS_f32\[fq\]\[fk\]\[k\] = -")
PV = Rule("pv_accumulation", r"\bRS_32_to_(?:8|16)\b|\bcompute_fp(?:8|16)_sv\w*"
          r"|\bwgmma_f8f8f32\b|\bRO_temp\b")
NORMALIZE = Rule("final_normalization_and_output", r"\bnormalize_d\b")
OUTPUT = Rule("final_normalization_and_output", r".", region="epilogue")
MMAS = ("int8_qk", "pv_accumulation")
FENCE_OPEN = Rule("", r"\bwarpgroup_arrive\b", nearest=MMAS, direction=1)
FENCE_CLOSE = Rule("", r"\bwarpgroup_(?:commit_batch|wait)\b", nearest=MMAS, direction=-1)
LOADS = Rule("loads_and_pipeline", r"\bload_\w+\s*[<(]|\bcp_async::|\b__syncthreads\b"
             r"|\bwait\s*\(|\bexpect_bytes\b|\binit_barrier\b|\bldmatrix\w*|^p \^= 1"
             r"|^for \( ?(?:uint32_t|int|unsigned) iter\b|^if \( ?num_iterations\b")
SCALES = Rule("scale_application", r"\b__int2float_rz\b|\bdequant_scale\b|\b[qQkK]_scale\b"
              r"|\bsm_scale\b")
SETUP = Rule("setup", r".", region="prologue")
INDEX = Rule("setup", r"\w(?:_lane_base|_idx|_offset\w*)\b|\bget_permuted_offset\b")

HEADERS = Rule("", r"^(?:for|if|else|while)\b|^[\w:<>]+ \w+(?:\[[^\]]*\])+;$", follow=True)

SAGE_RULES = (QK, SOFTMAX, PV, NORMALIZE, OUTPUT, FENCE_OPEN, FENCE_CLOSE, LOADS, SCALES, SETUP,
              INDEX, HEADERS)

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("sm89", "qk_int_sv_f8_attn_kernel", "qk_int_sv_f8_cuda_sm89.cuh", "_qattn_sm89",
           SAGE_RULES),
    Family("sm90", "qk_int8_sv_f8_attn_kernel", "qk_int_sv_f8_cuda_sm90.cu", "_qattn_sm90",
           SAGE_RULES),
    Family("sm80", "qk_int_sv_f16_attn_kernel", "qk_int_sv_f16_cuda_sm80.cu", "_qattn_sm80",
           SAGE_RULES),
    # tests/profile_fixtures/toy_attention.cu: the same names, so the same rules
    Family("toy", "toy_attention_kernel", "toy_attention.cu", "toy_attention", SAGE_RULES),
)}
