"""Attribution on a hand-written listing and CSV that use SageAttention's file and function
names (csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh, compute_int_qk, ...). The kernel source below is
written for this test: a stand-in with the same call names, no SageAttention code."""

from __future__ import annotations

from pathlib import Path

from sagetui.core.profile.attribute import attribute, choose_function
from sagetui.core.profile.kernel_source import SourceIndex, resolve_source
from sagetui.core.profile.listing import parse_listing
from sagetui.core.profile.ncu_csv import parse_source_csv
from sagetui.core.profile.place import Placer
from sagetui.core.profile.rules import FAMILIES, UNATTRIBUTED

STAND_IN = """\
template <uint32_t CTA_Q>
__global__ void qk_int_sv_f8_attn_kernel(int8_t *Q, float *Q_scale, float *K_scale)
{
  const uint32_t lane_id = get_lane_id();
  load_global_to_share<CTA_Q>(
    &Q_lane_base_ptr, Q_smem_offset_load, smem_Q);
  float q_scale = Q_scale[q_scale_idx];
  for (uint32_t iter = 1; iter < num_iterations - 1; iter++)
  {
    cp_async::wait_group<1>();
    compute_int_qk<CTA_Q>(smem_K, RS, RQ, K_smem_offset_mma);
    RS_f32[0] = __int2float_rz(RS[0]);
    update_mdo<CTA_Q>(RS_f32, RO, m, d, sm_scale);
    RS_32_to_8<CTA_Q>(RS_f32, RS_f8);
    compute_fp8_sv_inst_buf<CTA_Q>(smem_V, RS_f8, RO, d);
  }
  normalize_d<CTA_Q>(RO, m, d);
  ((uint32_t*)(smem_O.base + offset_O))[lane_id % 4] = RO_f16[0];
}
"""
K = "/build/SageAttention/csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh"
MMA = "/build/SageAttention/csrc/mma.cuh"
PERM = "/build/SageAttention/csrc/permuted_smem.cuh"


def line_of(text: str) -> int:
    return next(i + 1 for i, ln in enumerate(STAND_IN.splitlines()) if text in ln)


def frames(*chain: tuple[str, int]) -> str:
    out = []
    for (f, ln), outer in zip(chain, [*chain[1:], None], strict=True):
        out.append(f'\t//## File "{f}", line {ln}' + (f' inlined at "{outer[0]}", line '
                                                      f'{outer[1]}' if outer else ""))
    return "\n".join(out)


def listing() -> tuple[str, list[tuple[int, str, int]]]:
    """The listing, and (offset, opcode, samples) rows for the CSV."""
    qk, pv = line_of("compute_int_qk<"), line_of("compute_fp8_sv_inst_buf<")
    blocks = [  # (chain, opcode, samples)
        (frames((K, line_of("lane_id = get_lane_id"))), "S2R", 1),
        (frames((K, line_of("&Q_lane_base_ptr"))), "LDGSTS", 4),  # the call's 2nd line
        (frames((K, line_of("float q_scale ="))), "LDG", 2),
        (frames((K, line_of("for (uint32_t iter"))), "ISETP", 3),
        (frames((K, line_of("wait_group<1>"))), "LDGDEPBAR", 5),
        # ldmatrix is shared by QK and PV: the outermost frame decides
        (frames((PERM, 10), (MMA, 20), (K, qk)), "LDSM", 7),
        (frames((MMA, 30), (K, qk)), "IMMA", 40),
        (frames((K, line_of("__int2float_rz"))), "I2F", 6),
        (frames((MMA, 5), (K, line_of("update_mdo<"))), "FMNMX", 9),
        (frames((K, line_of("RS_32_to_8<"))), "F2FP", 8),
        (frames((PERM, 10), (MMA, 20), (K, pv)), "LDSM", 11),
        (frames((MMA, 40), (K, pv)), "HMMA", 60),
        (frames((K, line_of("normalize_d<"))), "MUFU", 3),
        (frames((K, line_of("RO_f16[0]"))), "STS", 2),
        (frames((MMA, 99)), "NOP", 5),  # no frame in the kernel file: unattributed
    ]
    text = ["//--------------------- .text._Z24qk_int_sv_f8_attn_kernelILj128EEvPaPfS1_ "
            "--------------------------", "\t.text._Z24qk_int_sv_f8_attn_kernelILj128EEvPaPfS1_:"]
    rows = []
    for i, (chain, op, n) in enumerate(blocks):
        text += [chain, f"        /*{i * 16:04x}*/                   {op} R1, R2 ;"]
        rows.append((i * 16, op, n))
    return "\n".join(text) + "\n", rows


def csv_text(rows: list[tuple[int, str, int]]) -> str:
    head = ('"Kernel Name","qk_int_sv_f8_attn_kernel<128>(signed char *, float *, float *)"\n'
            '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling '
            '(Not-issued Samples)","Instructions Executed","stall_wait","stall_wait (Not '
            'Issued)","stall_long_sb"\n')
    body = "".join(f'"0x{0x7f0000001000 + off:x}","  {op} R1, R2","{n:,}","0","{n * 100:,}",'
                   f'"{n // 2}","{n // 4}","{n - n // 2}"\n' for off, op, n in rows)
    return head + body


def test_sage_names_place_every_instruction_by_its_outermost_frame(tmp_path: Path):
    src_dir = tmp_path / "csrc" / "qattn"
    src_dir.mkdir(parents=True)
    (src_dir / "qk_int_sv_f8_cuda_sm89.cuh").write_text(STAND_IN)
    text, rows_in = listing()
    rows = parse_source_csv(csv_text(rows_in))
    assert rows[1].samples == 4 and rows[0].offset == 0 and rows[1].offset == 16
    assert rows[6].stalls == {"wait": 20, "long_sb": 20}  # the Not-Issued subset left out
    fam = FAMILIES["sm89"]
    func = choose_function(parse_listing(text), rows, fam.kernel)
    path = resolve_source(K, [str(tmp_path)])  # the build path is gone: found by its tail
    assert path == src_dir / "qk_int_sv_f8_cuda_sm89.cuh"
    a = attribute(rows, func, fam.file, Placer(fam, SourceIndex(path.read_text())))
    got = {k: c.samples for k, c in a.phases.items() if c.samples}
    assert got == {"setup": 1, "loads_and_pipeline": 4 + 3 + 5, "scale_application": 2 + 6,
                   "int8_qk": 7 + 40, "online_softmax": 9, "pv_accumulation": 8 + 11 + 60,
                   "final_normalization_and_output": 3 + 2, UNATTRIBUTED: 5}
    assert a.phases["pv_accumulation"].executed == (8 + 11 + 60) * 100
    assert a.total_samples == sum(n for *_, n in rows_in)
    assert a.lines[0].line == line_of("compute_fp8_sv_inst_buf<")


def test_sm90_wgmma_fences_belong_to_the_product_they_fence():
    src = """\
__global__ void qk_int8_sv_f8_attn_kernel(float sm_scale)
{
  for (uint32_t iter = 1; iter < num_iterations; iter++)
  {
    wait(&barrier_K, p);
    wgmma::warpgroup_arrive();
    wgmma::wgmma_s8s8s32<CTA_K, 0, head_dim>(RS[fq], sQ_local, sK);
    wgmma::warpgroup_commit_batch();
    wgmma::warpgroup_wait<0>();
    update_mdo<num_tiles_q>(RS_f32, RO, m, d, sm_scale);
    RS_32_to_8<num_tiles_q, num_tiles_k>(RS_f32, RS_f8);
    wgmma::warpgroup_arrive();
    wgmma::wgmma_f8f8f32<head_dim, 0, CTA_K>(RO_temp[fq], RS_f8[fq][0], &sV[0]);
    wgmma::warpgroup_commit_batch();
    wgmma::warpgroup_wait<0>();
  }
}
"""
    placer = Placer(FAMILIES["sm90"], SourceIndex(src))
    lines = src.splitlines()
    fences = [i + 1 for i, ln in enumerate(lines) if "warpgroup_" in ln]
    assert [placer.place(n).phase for n in fences] == ["int8_qk"] * 3 + ["pv_accumulation"] * 3
