"""The gate's orchestration: the rules in order, each one's reason, from the file walk and the
worker's result (check_submission, timed_validity)."""
from __future__ import annotations

import os
import time
from typing import Any

from .limits import DEFAULT_WORKER_TIMEOUT_S, ResourceLimits, default_worker_memory
from .protocol import WorkerResult
from .rule_results import RuleResult, ValidityReport, not_checked
from .rules import RULES
from .runner import run_worker
from .text import cap, clean, counted, human_bytes, show, summarise
from .walk import WalkResult, check_local_package, check_single_root, walk_package


def check_submission(
    submission: str | os.PathLike,
    limits: ResourceLimits | dict | None = None,
    *,
    timeout_s: float | None = None,
    memory_bytes: int | None = None,
    reference: str | os.PathLike | None = None,
    variant_selections: dict | None = None,
) -> ValidityReport:
    """Run every validity rule on ``submission``; never raises because of it.

    ``timeout_s`` (default 300 s) bounds the USD worker's wall-clock time and
    ``memory_bytes`` overrides :func:`default_worker_memory`.  ``reference``, the
    reference's root layer, sizes the composed-stage budgets (else only the
    absolute limits apply).  ``variant_selections``, the case's, compose both
    stages as the grade does: the layers they reach are reported as composed,
    the others apart (every layer is still read and checked for escapes).
    """
    if limits is None:
        limits = ResourceLimits()
    elif isinstance(limits, dict):
        limits = ResourceLimits.from_dict(limits)
    elif not isinstance(limits, ResourceLimits):
        raise TypeError(f"limits must be ResourceLimits, got {type(limits).__name__}")
    try:
        return _check(submission, limits, timeout_s, memory_bytes,
                      None if reference is None else os.fspath(reference), dict(variant_selections or {}))
    except Exception as exc:  # a verifier bug: report it, never crash the session
        msg = f"validity gate crashed: {type(exc).__name__}: {clean(exc)}"
        return ValidityReport(
            rules=tuple(RuleResult(r, False, f"not checked: {msg}") for r in RULES),
            root_layer=None,
            layer_count=0,
            infrastructure_error=msg,
        )


def timed_validity(submission: str | os.PathLike, limits: ResourceLimits,
                   reference: str | os.PathLike | None = None,
                   variant_selections: dict | None = None) -> tuple[ValidityReport, float]:
    """check_submission and its wall time in seconds (run in the background by the plugin)."""
    start = time.perf_counter()
    report = check_submission(submission, limits, reference=reference, variant_selections=variant_selections)
    return report, round(time.perf_counter() - start, 6)


def _report(results: dict[str, RuleResult], root_layer: str | None = None, layer_count: int = 0,
            infra: str | None = None) -> ValidityReport:
    return ValidityReport(
        rules=tuple(results[r] for r in RULES),
        root_layer=root_layer,
        layer_count=layer_count,
        infrastructure_error=infra,
    )


def _skipped(rules: tuple[str, ...], earlier: str) -> dict[str, RuleResult]:
    return {r: not_checked(r, earlier) for r in rules}


def _check(submission: Any, limits: ResourceLimits, timeout_s: float | None,
           memory_bytes: int | None, reference: str | None = None, selections: dict | None = None) -> ValidityReport:
    lp, root = check_local_package(submission)
    results = {"local_package": lp}
    if root is None:
        return _report(results | _skipped(RULES[1:], "local_package"))

    results["single_root_layer"], root_layer = check_single_root(root)
    walk = walk_package(root, limits)
    if walk.offences:
        results["resource_limits"] = RuleResult(
            "resource_limits", False, summarise(walk.offences, "offence"), cap(walk.offences)
        )
        return _report(results | _skipped(RULES[3:], "resource_limits"), root_layer)
    if root_layer is None:
        results["resource_limits"] = not_checked(
            "resource_limits", "single_root_layer",
            f"the file walk alone found {_walk_summary(walk, limits)}; prim and point counts need a root layer",
        )
        return _report(results | _skipped(RULES[3:], "single_root_layer"))

    if memory_bytes is None:
        memory_bytes = default_worker_memory(limits, walk.text_bytes, walk.binary_bytes)
    if timeout_s is None:
        timeout_s = DEFAULT_WORKER_TIMEOUT_S
    out, infra = run_worker(root, root_layer, limits, timeout_s, memory_bytes, reference, selections)
    if infra is not None:
        for r in RULES[2:]:
            results[r] = RuleResult(r, False, f"not checked: verifier infrastructure error: {infra}")
        return _report(results, root_layer, 0, infra)
    if out.budget:
        results["resource_limits"] = RuleResult("resource_limits", False, clean(out.budget), cap([out.budget]))
        return _report(results | _skipped(RULES[3:], "resource_limits"), root_layer, len(out.layers))
    results["resource_limits"] = _resource_rule(out, walk, limits)
    if out.composed is not None and out.composed.error:
        out.parse_errors.append(out.composed.error)
    results["layers_parse"] = _layers_rule(out, root, bool(selections))
    results["dependencies_inside"] = _dependencies_rule(out)
    return _report(results, root_layer, len(out.layers))


def _walk_summary(walk: WalkResult, limits: ResourceLimits) -> str:
    return (
        f"{counted(walk.files, 'file')}, {human_bytes(walk.total_bytes)} in {counted(walk.dirs, 'subfolder')} "
        f"(limits: {limits.max_files} files, {limits.max_file_bytes} bytes per file, "
        f"{limits.max_total_bytes} bytes in total)"
    )


def _resource_rule(out: WorkerResult, walk: WalkResult, limits: ResourceLimits) -> RuleResult:
    """Within the parsed budget: passed with every count, unless the composed stage is refused."""
    composed = out.composed
    if composed is not None and composed.refusal:
        return RuleResult("resource_limits", False, clean(composed.refusal), (clean(composed.refusal),))
    parsed_summary = (
        f"{counted(out.prims, 'prim spec')} and {counted(out.points, 'point')} over "
        f"{counted(len(out.layers), 'layer')} (limits: {limits.max_prims} prims, {limits.max_points} points)"
    )
    symlink_note = (f"; {counted(walk.symlinks, 'symlink')}, all resolving inside the package"
                    if walk.symlinks else "")
    counts = composed.counts if composed is not None else None
    composed_note = ("; composed: " + ", ".join(f"{v} {k}" for k, v in counts.items())
                     + f" (budgets: {', '.join(f'{v} {k}' for k, v in composed.budgets.items())})"
                     if counts else "")
    return RuleResult(
        "resource_limits", True,
        f"{_walk_summary(walk, limits)}{symlink_note}; {parsed_summary}{composed_note}",
    )


def _layers_rule(out: WorkerResult, root: str, selected: bool = False) -> RuleResult:
    if out.parse_errors:
        return RuleResult(
            "layers_parse", False,
            summarise(out.parse_errors, "layer error", out.parse_error_total), cap(out.parse_errors)
        )
    layers = out.layers
    composed = set(out.composed.layers) if out.composed is not None and out.composed.layers is not None else None
    apart = [p for p in layers if composed is not None and os.path.normpath(p) not in composed]
    if not apart:
        return RuleResult(
            "layers_parse", True,
            f"{counted(len(layers), 'layer')} open and every authored value reads back: {_names(layers, root)}",
        )
    # Layers only variants the stage does not select reach (another engine's physics): read and
    # checked like the rest, but not what the grade composes: said apart, so nobody takes them for it.
    used = [p for p in layers if p not in apart]
    under = "under the case's variant selections" if selected else "with the variants the package selects"
    return RuleResult(
        "layers_parse", True,
        f"{counted(len(layers), 'layer')} open and every authored value reads back; composed {under}: "
        f"{counted(len(used), 'layer')} ({_names(used, root)}); not composed (behind variants not selected, or "
        f"arcs the stage does not use; read and checked for escapes all the same): "
        f"{counted(len(apart), 'layer')} ({_names(apart, root)})",
    )


def _names(layers: list[str], root: str, shown: int = 8) -> str:
    more = f" and {len(layers) - shown} more" if len(layers) > shown else ""
    return ", ".join(show(p, root) for p in layers[:shown]) + more


def _dependencies_rule(out: WorkerResult) -> RuleResult:
    if out.dep_errors:
        reason = summarise(out.dep_errors, "dependency offence", out.dep_error_total)
        if out.parse_errors:
            reason += "; layers that failed to parse were not inspected"
        return RuleResult("dependencies_inside", False, reason, cap(out.dep_errors))
    if out.parse_errors:
        return not_checked("dependencies_inside", "layers_parse", "no offence in the layers that did parse")
    stats, cross, missing = out.dep_stats, out.cross_check, out.missing_inside
    missing_note = (f"; {counted(len(missing), 'path')} name a file missing inside the package "
                    f"(a composition error, graded by the composition checks): {missing[0]}" if missing else "")
    return RuleResult(
        "dependencies_inside", True,
        f"{counted(stats.layer_arcs, 'layer arc')} (sublayers/references/payloads/clips) and "
        f"{counted(stats.assets, 'asset path')} ({counted(stats.asset_files, 'distinct file')}), "
        f"all inside the package" + (f"; {cross}" if cross else "") + missing_note,
        cap(missing),
    )
