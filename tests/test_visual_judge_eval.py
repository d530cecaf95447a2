"""bench/judge_eval.py: the pairs really differ where they should, and no key means it plainly did not run."""
from __future__ import annotations

import json

import pytest

from bench import judge_eval
from usd_repair_verifier.visual import judge as judges

pytestmark = pytest.mark.usefixtures("no_network")


@pytest.mark.slow
def test_without_a_key_it_says_it_did_not_run(tmp_path, monkeypatch, capsys):
    for name in judges.CREDENTIAL_ENVS:
        monkeypatch.delenv(name, raising=False)
    code = judge_eval.main(["--out", str(tmp_path), "--size", "128", "--views", "front,three_quarter"])
    report = json.loads((tmp_path / "judge_eval.json").read_text())
    assert code == 0 and "NOT RUN" in capsys.readouterr().out
    assert report["status"] == "not_run" and report["judge_ran"] is False and "agreement" not in report
    pixels = report["differing_pixels"]
    assert set(pixels) == set(judge_eval.PAIRS)
    assert sum(pixels["identical"].values()) == 0
    for name in judge_eval.PAIRS:                    # every known difference shows in the renders
        if name != "identical":
            assert sum(pixels[name].values()) > 0, name
    # a bigger move changes more pixels
    moved = [sum(pixels[f"handle_moved_{d}cm"].values()) for d in (1, 2, 5)]
    assert moved[0] < moved[2]


def test_agreement_counts_the_expected_verdicts():
    all_pass = {c: "pass" for c in ("placement", "no_missing_parts", "no_extra_parts", "proportions",
                                    "materials_and_colours", "silhouette", "surface_artefacts")}
    results = {"identical": all_pass, "handle_moved_5cm": {**all_pass, "placement": "fail"},
               "knob_missing": all_pass, "extra_box": None}
    report = judge_eval.agreement(results)
    assert report["agreement"] == pytest.approx(2 / 4)
    assert report["pairs"]["knob_missing"]["agree"] is False and report["pairs"]["extra_box"]["agree"] is None
