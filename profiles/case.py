"""A case on disk: CASE/profile.json, CASE/reference/, CASE/input/ (README, "A case")."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .digest import file_digest, tree_digest
from .schema import SCORING_VERSION, Profile, ProfileError, load_profile
from .errors import InfrastructureFault


class CaseError(InfrastructureFault):
    """The case cannot be graded with: missing parts, malformed profile. An infrastructure error."""


class DigestMismatch(CaseError):
    """reference/ or input/ is not what the profile froze. An infrastructure error, never a score."""


@dataclass(frozen=True)
class CasePaths:
    root: Path

    @property
    def profile(self) -> Path:
        return self.root / "profile.json"

    @property
    def reference(self) -> Path:
        return self.root / "reference"

    @property
    def input(self) -> Path:
        return self.root / "input"


@dataclass(frozen=True)
class Case:
    paths: CasePaths
    profile: Profile
    profile_digest: str

    @property
    def reference_root_layer(self) -> Path:
        return self.paths.reference / self.profile.reference.root_layer


def load_case(root: str | Path, verify_digests: bool = True) -> Case:
    paths = CasePaths(Path(root).resolve())
    if not paths.root.is_dir():
        raise CaseError(f"case folder {paths.root} does not exist")
    for part in (paths.profile, paths.reference, paths.input):
        if not part.exists():
            raise CaseError(f"case is missing {part.name} ({part})")
    try:
        profile = load_profile(paths.profile)
    except ProfileError as error:
        raise CaseError(f"malformed profile: {error}") from error
    if profile.scoring_version != SCORING_VERSION:
        # Frozen input errors are measured by the scoring code: another version would
        # grade progress against errors it did not measure.
        raise CaseError(f"the profile was frozen for scoring version {profile.scoring_version!r}; "
                        f"this verifier scores version {SCORING_VERSION!r}: re-freeze the case")
    case = Case(paths, profile, file_digest(paths.profile))
    if not case.reference_root_layer.is_file():
        raise CaseError(f"reference root layer {case.reference_root_layer} does not exist")
    if verify_digests:
        for side, record, folder in (
            ("reference", profile.reference, paths.reference),
            ("input", profile.input, paths.input),
        ):
            actual = tree_digest(folder)
            if actual != record.digest:
                raise DigestMismatch(f"{side}/ digest {actual} differs from the profile's {record.digest}")
    return case
