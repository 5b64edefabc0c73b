"""The counts, seeds and thresholds of one audit (all stored with its results)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Slice fields of a declared pair unless the caller names others.
DEFAULT_HINT_FIELDS = ("question_type", "difficulty")

#: The context-selection comparison's paired bootstrap (section 11, CoRA-Bench
#: App. B): its ``default_rng`` seed and its draws.
SELECTION_BOOTSTRAP_SEED = 5768
SELECTION_DRAWS = 2000

#: Counts that must be at least 1: zero draws or splits would publish nulls
#: whose reasons blame the panel instead of the setting.
COUNTS = ("draws", "splits", "null_draws", "null_splits", "pair_draws")


class InvalidSetting(ValueError):
    """One setting out of range; ``name`` is the field, ``problem`` the rest of the sentence."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"`{name}` {problem}")
        self.name = name
        self.problem = problem


@dataclass(frozen=True)
class AuditSettings:
    """Counts, seeds and thresholds of one audit (all stored with the results)."""

    gap: float = 0.05
    seed: int = 20260821
    draws: int = 5000
    splits: int = 5000
    null_draws: int = 200
    null_splits: int = 250
    null_seed: int | None = None  # default: seed + 1 (separate from the replay)
    retention_threshold: float = 0.75
    excess_threshold: float = 0.05
    level: float = 0.95
    power: float = 0.8  # of the minimum detectable effect (section 12)
    nulls: bool = True
    sensitivity: bool = False
    pair_draws: int = 2000
    minimum_slice_rows: int = 10

    def __post_init__(self) -> None:
        for name in COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidSetting(
                    name, f"must be a whole number >= 1, got {value!r}"
                )
        if not 0 <= self.gap <= 1:
            raise InvalidSetting("gap", f"must lie in [0, 1], got {self.gap!r}")
        if not 0 < self.level < 1:
            raise InvalidSetting("level", f"must lie in (0, 1), got {self.level!r}")
        if not 0 < self.power < 1:
            raise InvalidSetting("power", f"must lie in (0, 1), got {self.power!r}")

    @property
    def effective_null_seed(self) -> int:
        return self.seed + 1 if self.null_seed is None else self.null_seed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["null_seed"] = self.effective_null_seed
        return out


#: The defaults of every statistic's keyword arguments: the one source of the
#: audit's defaults (the CLI reads its option defaults from it too).
DEFAULTS = AuditSettings()
