"""`usdgrade visual`: the separate visual grade (trusted renders + rubric judge)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from usd_repair_verifier.profiles.errors import ExitCode



def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "visual", help="visual grade: trusted renders of the graded bytes judged against a rubric",
        description="Writes OUT/visual.json and OUT/renders/*.png. Never changes authored_usd. "
                    "Sends images to an outside service: needs --authorize or USDGRADE_VISUAL_AUTHORIZE=1 "
                    "(not with --judge fake, which sends nothing).")
    p.add_argument("--case", required=True, help="the case the submission was graded against")
    p.add_argument("--submission", required=True, metavar="DIR", help="the graded submission (the very bytes grade.json records)")
    p.add_argument("--grade", required=True, help="the objective grade.json of this submission")
    p.add_argument("--out", required=True, help="folder for visual.json and renders/ (usually the grade's OUT)")
    p.add_argument("--authorize", action="store_true", help="allow sending renders to the judge service")
    p.add_argument("--judge", choices=("anthropic", "fake"), default="anthropic",
                   help="anthropic: the Messages API (needs ANTHROPIC_API_KEY); fake: a dry run, nothing sent")
    p.add_argument("--judge-model", default=None, help="model id (else USDGRADE_JUDGE_MODEL, else claude-opus-5-5)")
    p.add_argument("--judge-votes", type=int, default=1, help="repeat the call K times; strict majority")
    p.add_argument("--rubric", default=None, help="rubric JSON (default: the shipped likeness rubric)")
    p.add_argument("--fake-verdict", choices=("pass", "fail", "unclear", "error"), default="pass",
                   help="dry run (--judge fake): the verdict of every criterion not in --fake-mapping")
    p.add_argument("--fake-mapping", default=None, metavar="FILE",
                   help="dry run (--judge fake): JSON object of criterion id -> pass | fail | unclear | error")
    p.add_argument("--cache-dir", default=None, help="judge result cache (else USDGRADE_VISUAL_CACHE, else OUT/.visual-cache)")
    p.set_defaults(run=run)
    return p


def missing_path(pairs) -> str | None:
    """The first path a person gave that is not there (one line), or None: a typo is not a grade."""
    for option, value, kind in pairs:
        path = Path(value)
        if not (path.is_dir() if kind == "folder" else path.is_file()):
            return f"{option} {value} is not a {kind}"
    return None


def run(args) -> int:
    from .grade import VISUAL_FILE, run_visual

    # A folder that is not there is a typo, not a grade (an unreadable --grade is an error record).
    missing = missing_path([("--case", args.case, "folder"), ("--submission", args.submission, "folder")])
    if missing:
        print(f"usdgrade visual: {missing}", file=sys.stderr)
        return ExitCode.USAGE
    try:
        record = run_visual(
            Path(args.case), Path(args.submission), Path(args.grade), Path(args.out),
            authorize=args.authorize, judge_kind=args.judge, judge_model=args.judge_model,
            votes=args.judge_votes, rubric_path=Path(args.rubric) if args.rubric else None,
            cache_dir=Path(args.cache_dir) if args.cache_dir else None, fake_verdict=args.fake_verdict,
            fake_mapping=Path(args.fake_mapping) if args.fake_mapping else None)
    except (ValueError, OSError) as error:  # OUT inside an input, or OUT cannot be made: nowhere to write
        print(f"usdgrade visual: {error}", file=sys.stderr)
        return ExitCode.USAGE
    score = "-" if record["score"] is None else f"{record['score']:.4f}"
    dry = "   DRY RUN (fake judge)" if record.get("dry_run") else ""
    print(f"visual {record['status']}   score {score}{dry}" + (f"   ({record['reason']})" if record["reason"] else ""))
    print(f"wrote {Path(args.out) / VISUAL_FILE}")
    return ExitCode.INFRASTRUCTURE_ERROR if record["status"] == "infrastructure_error" else ExitCode.DONE
