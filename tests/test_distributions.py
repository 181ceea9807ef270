"""Synthetic inputs that stress quantization (`--inputs synthetic:NAME`): each draws
what core/distributions.py says and has the property it claims, from the seed alone; a bad name
is one line and exit 2; the configuration, its command line and the report all carry the name,
and `check` holds the report's inputs block to the configuration."""

from __future__ import annotations

import json

import pytest
import torch

from sagetui.core import distributions
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec, resolve_auto
from sagetui.core.export.report import to_markdown
from sagetui.core.report.model import Report
from sagetui.core.run_argv import explicit_options, to_argv
from sagetui.runner.inputs import synthetic

from .conftest import TINY


def draw(name: str, *, seed: int = 0, layout: str = "HND", q_len: int = 512, heads: int = 4,
         kv_heads: int = 2, head_dim: int = 64) -> tuple[torch.Tensor, ...]:
    """q, k, v in fp32, [B, H, N, D] whatever the layout they were drawn in."""
    shape = Shape(batch=1, heads=heads, kv_heads=kv_heads, q_len=q_len, head_dim=head_dim,
                  layout=layout, distribution=name)
    cfg = RunConfig(shape=shape, seed=seed, variants=[VariantSpec(name="r", backend="reference")])
    out = synthetic(cfg, "cpu")
    return tuple((t.transpose(1, 2) if layout == "NHD" else t).float() for t in out)


def test_the_table_names_each_distribution_with_parameters_and_an_observation() -> None:
    assert distributions.NAMES == ("randn", "kbias", "outliers", "sinks", "heavytail")
    for d in distributions.TABLE.values():
        assert d.draws and d.models
        assert (d.name == "randn") == (not d.params)
    cites = " ".join(d.models for d in distributions.TABLE.values())
    for paper in ("SageAttention", "Attention Sinks", "LLM.int8", "SmoothQuant"):
        assert paper in cites


@pytest.mark.parametrize("name", distributions.NAMES)
def test_deterministic_by_seed(name: str) -> None:
    for layout in ("HND", "NHD"):
        a, b = draw(name, seed=3, layout=layout), draw(name, seed=3, layout=layout)
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
        assert not torch.equal(a[1], draw(name, seed=4, layout=layout)[1])


def test_randn_is_what_the_default_always_drew() -> None:
    """The default's inputs are the bytes they were before the table (their sha256 is in
    every report): standard normal in the layout's own shape, q then k then v."""
    shape = Shape(batch=1, heads=2, q_len=64, head_dim=32)
    cfg = RunConfig(shape=shape, seed=5, variants=[VariantSpec(name="r", backend="reference")])
    gen = torch.Generator().manual_seed(5)
    want = [torch.randn(s, generator=gen).to(torch.bfloat16)
            for s in shape.tensor_shapes().values()]
    assert all(torch.equal(x, y) for x, y in zip(synthetic(cfg, "cpu"), want, strict=True))


def test_kbias_gives_each_channel_of_k_a_mean_far_larger_than_its_spread() -> None:
    q, k, v = draw("kbias")
    mean, std = k.mean(dim=2), k.std(dim=2)  # per head and channel, over the tokens
    assert (mean.abs().mean() / std.mean()).item() > 4  # bias_std 8: E|offset| = 6.4
    assert 0.9 < std.mean().item() < 1.1  # the tokens' own spread is the standard normal's
    assert q.mean(dim=2).abs().max().item() < 0.3 and v.mean(dim=2).abs().max().item() < 0.3


def test_outliers_are_a_few_channels_of_q_and_of_k() -> None:
    q, k, _ = draw("outliers")
    p = distributions.TABLE["outliers"].params
    for x in (q, k):
        rms = x.square().mean(dim=(0, 1, 2)).sqrt()  # per channel
        big = (rms > 3).nonzero().flatten().tolist()
        assert len(big) == p["channels"]
        assert rms[big].min().item() > 0.8 * p["scale"]
    big_q = set((q.square().mean(dim=(0, 1, 2)).sqrt() > 3).nonzero().flatten().tolist())
    big_k = set((k.square().mean(dim=(0, 1, 2)).sqrt() > 3).nonzero().flatten().tolist())
    assert not big_q & big_k  # disjoint: they set the int8 scales, not the scores


def test_sinks_draw_most_of_the_attention_mass_in_fp32_attention() -> None:
    q, k, _ = draw("sinks", kv_heads=2, heads=4, head_dim=64)
    tokens = int(distributions.TABLE["sinks"].params["tokens"])
    scores = q @ k.repeat_interleave(2, dim=1).transpose(-1, -2) * 64 ** -0.5
    p = torch.softmax(scores.double(), dim=-1)
    mass = p[..., :tokens].sum(dim=-1)
    assert mass.mean().item() > 0.5  # 4 of 512 keys
    plain = torch.softmax((lambda a, b: a @ b.repeat_interleave(2, 1).transpose(-1, -2) * 0.125)(
        *draw("randn", heads=4, kv_heads=2)[:2]).double(), dim=-1)
    assert plain[..., :tokens].sum(dim=-1).mean().item() < 0.05


def test_heavytail_is_student_t_of_unit_variance() -> None:
    q, k, v = draw("heavytail", q_len=4096)
    x = torch.cat([t.flatten() for t in (q, k, v)]).double()
    assert 0.85 < x.var().item() < 1.15  # bf16 rounding and the t(3) tail's sampling noise
    gauss = torch.cat([t.flatten() for t in draw("randn", q_len=4096)]).double()
    # far more mass beyond 5 standard deviations than a normal's (5.7e-7)
    assert (x.abs() > 5).double().mean().item() > 100 * (gauss.abs() > 5).double().mean().item()


def test_the_configuration_and_its_command_line_carry_the_name() -> None:
    from sagetui.cli.main import build_parser
    from sagetui.cli.run_options import config_from_args

    args = build_parser().parse_args(["run", "--inputs", "synthetic:sinks", *TINY])
    cfg = config_from_args(args)
    assert cfg.shape.distribution == "sinks" and cfg.inputs_path is None
    assert cfg.shape.describe().endswith("synthetic:sinks")
    assert explicit_options(cfg)["--inputs"] == "synthetic:sinks"
    again = config_from_args(build_parser().parse_args(["run", *to_argv(explicit_options(cfg))]))
    assert again == cfg
    # no shape given: the machine still picks it, and the distribution goes with it
    auto = config_from_args(build_parser().parse_args(["run", "--inputs", "synthetic:kbias"]))
    assert auto.auto_shape
    gpu = resolve_auto(auto, "cuda:0", {"sage2-sm90": None})
    assert gpu.shape.q_len == 37810 and gpu.shape.distribution == "kbias"
    # the default is not written out: a configuration of standard-normal inputs reads as before
    assert "distribution" not in Shape(heads=1, q_len=8, head_dim=64).model_dump()


@pytest.mark.parametrize("value", ["synthetic:nosuch", "synthetic:"])
def test_a_bad_name_is_one_line_and_exit_2(cli_here, value) -> None:
    # in this process (main() as `python -m sagetui` calls it, its exit status and stderr):
    # a refusal needs no interpreter of its own; test_cli's refusals run as a child process
    out = cli_here("run", "--inputs", value, *TINY)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert lines[0].startswith("sagetui: error: --inputs: unknown synthetic inputs")
    assert "synthetic:kbias" in lines[0]  # it names the known ones


def test_a_run_records_the_distribution_and_check_holds_it_to_the_configuration(
        cli_here, tmp_path) -> None:
    out = cli_here("run", "--inputs", "synthetic:heavytail", "--seed", "7", *TINY, "--rounds", "1",
                   "--iterations", "1", "--json", "r.json")
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["config"]["shape"]["distribution"] == "heavytail"
    assert data["inputs"] == {**distributions.TABLE["heavytail"].block(), "seed": 7}
    assert check_report(Report.model_validate(data)) == []
    assert "- inputs: synthetic:heavytail (df 3), seed 7: heavy-tailed" in to_markdown(
        Report.model_validate(data))
    data["inputs"]["distribution"] = "kbias"
    data["inputs"]["seed"] = 8
    found = [str(m) for m in check_report(Report.model_validate(data))]
    assert any(m.startswith("$.inputs.distribution: recorded 'kbias', recomputed 'heavytail'")
               for m in found), found
    assert any(m.startswith("$.inputs.seed") for m in found), found


def test_compare_says_when_the_inputs_differ_and_does_not_refuse() -> None:
    from sagetui.core.compare.facts import differences, facts
    from sagetui.core.report.io import load_report

    from .conftest import SAMPLES

    randn = load_report(SAMPLES / "cpu_reference_variants.json")
    data = randn.to_json_dict()
    data["config"]["shape"]["distribution"] = "kbias"  # the same run on other inputs
    kbias = Report.model_validate(data)
    refuse, said = differences(facts(randn), facts(kbias))
    assert refuse == [] and said == ["inputs synthetic:randn vs synthetic:kbias"]
    assert differences(facts(kbias), facts(kbias)) == ([], [])
