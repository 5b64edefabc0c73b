"""BABILong's label scorer (``booydar/babilong`` ``babilong/metrics.py`` @7a6efee).

``compare_answers(target, output, question, task_labels)``:

1. Lowercase the output, keep the text before the first ``.``, then cut at
   ``<context>``, ``<example>`` and ``Question`` (the last never fires after
   lowercasing: an upstream quirk kept for comparability).
2. Found = task labels occurring (substring) in the output, minus the labels
   occurring in the lowercased question.
3. A target with a comma and longer than 3 characters (qa8's ``apple,milk``)
   is split on ``,`` (parts not stripped, as upstream) and needs every part
   found and exactly as many labels found as parts; any other target must be
   found and be the only label found.
"""

from __future__ import annotations

from generation.scorers.base import ScoreInput, Scorer
from warehouse.errors import WarehouseError

_ROOMS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
_YES_NO = ("no", "yes")

#: Upstream ``TASK_LABELS`` by task.
TASK_LABELS: dict[str, tuple[str, ...]] = {
    "qa1": _ROOMS,
    "qa2": _ROOMS,
    "qa3": _ROOMS,
    "qa4": _ROOMS,
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
    "qa6": _YES_NO,
    "qa7": ("none", "one", "three", "two"),
    "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": _YES_NO,
    "qa10": ("maybe", "no", "yes"),
    "qa11": _ROOMS,
    "qa12": _ROOMS,
    "qa13": _ROOMS,
    "qa14": ("bedroom", "cinema", "kitchen", "office", "park", "school"),
    "qa15": ("cat", "mouse", "sheep", "wolf"),
    "qa16": ("gray", "green", "white", "yellow"),
    "qa17": _YES_NO,
    "qa18": _YES_NO,
    "qa19": (
        "e,e",
        "e,n",
        "e,s",
        "n,e",
        "n,n",
        "n,w",
        "s,e",
        "s,s",
        "s,w",
        "w,n",
        "w,s",
        "w,w",
    ),  # fmt: skip
    "qa20": ("bedroom", "bored", "garden", "hungry", "kitchen", "thirsty", "tired"),
}


def task_labels(task: str) -> tuple[str, ...]:
    """The label set of ``task`` (``qa1``, ``qa2_1k`` -> ``qa2``)."""
    key = str(task or "").split("_")[0].lower()
    if key not in TASK_LABELS:
        raise WarehouseError(f"no BABILong label set for task {task!r}")
    return TASK_LABELS[key]


def preprocess_output(output: str) -> str:
    output = output.lower().split(".")[0]
    for marker in ("<context>", "<example>", "Question"):
        output = output.split(marker)[0]
    return output


def compare_answers(target: str, output: str, question: str, task: str) -> float:
    output = preprocess_output(str(output or ""))
    target = str(target).lower()
    labels = {label.lower() for label in task_labels(task)}
    in_question = {label for label in labels if label in str(question or "").lower()}
    found = {label for label in labels if label in output} - in_question
    if "," in target and len(target) > 3:
        parts = target.split(",")
        return float(all(part in found for part in parts) and len(found) == len(parts))
    return float(target in found and len(found) == 1)


def _label(item: ScoreInput) -> float:
    return compare_answers(
        item.references[0], item.prediction, item.question, item.task
    )


SCORER = Scorer(
    name="babilong-official",
    version=1,
    rules={"label": _label},
    source="booydar/babilong babilong/metrics.py @7a6efee (compare_answers)",
)
