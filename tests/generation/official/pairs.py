"""Seeded random and adversarial (prediction, golds) pairs for the scorer tests.

Fragments cover what the official scripts treat differently: articles, yes/no/
noanswer, ASCII and Unicode punctuation, TriviaQA's quote-like characters,
underscores, composed vs decomposed accents (NFD), numbers, odd whitespace
and empty strings. Half the golds are perturbations of the prediction (case,
articles, punctuation, accents) so normalised equality is hit often.
"""

from __future__ import annotations

import random
import unicodedata

WORDS = [
    "paris", "Paris", "new", "york", "New York", "the", "The", "a", "an", "A",
    "An", "THE", "yes", "Yes", "no", "NO", "noanswer", "no answer", "beatles",
    "1990", "1990–91", "3.14", "1,000", "42", "0", "café", "cafe\u0301", "Åland",
    "A\u030aland", "naïve", "ﬁsh", "Straße", "İstanbul", "東京", "x_y", "__init__",
    "rock_and_roll", "O'Brien", "O’Brien", "‘quoted’", "´acute", "`tick`",
    "\"dq\"", "“curly”", "Mr.", "U.S.A.", "e.g.", "anthem", "theory", "then",
    "and", "of", "art", "party", "Mira", "mira", "kitchen", "garden", "office",
    "Mary", "milk", "apple", "football", "apple,milk", "e,n", "none", "two",
]  # fmt: skip
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["–", "—", "…", "‘", "’", "´", "«"]
SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u2003", " \n "]
FIXED = [
    ("", [""]),
    ("", ["yes"]),
    ("yes", [""]),
    ("   ", ["!!!"]),
    ("the", ["a"]),
    ("an", [""]),
    ("yes", ["yes"]),
    ("Yes.", ["yes"]),
    ("no", ["no way"]),
    ("yes it is", ["yes"]),
    ("noanswer", ["noanswer"]),
    ("no answer", ["noanswer"]),
    ("O’Brien", ["o brien"]),
    ("O'Brien", ["obrien"]),
    ("rock_and_roll", ["rock and roll"]),
    ("café", ["cafe\u0301"]),
    ("Åland", ["A\u030aland"]),
    ("1990–91", ["1990-91"]),
    ("`tick`", ["tick"]),
    ("It was Mira.", ["Mira"]),
    ("mira", ["Mira"]),
    ("Mary is in the kitchen.", ["kitchen"]),
    ("1990–the–91", ["1990– –91"]),
    ("«the»", ["« »", "«»"]),
    ("東京the東京", ["東京 東京"]),
]


def _phrase(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 6)):
        roll = rng.random()
        if roll < 0.6:
            parts.append(rng.choice(WORDS))
        elif roll < 0.8:
            parts.append(rng.choice(PUNCT))
        else:
            parts.append(rng.choice(SPACES))
        if rng.random() < 0.7:
            parts.append(rng.choice(SPACES[:2]))
    return "".join(parts)


def _perturb(rng: random.Random, text: str) -> str:
    roll = rng.random()
    if roll < 0.15:
        text = text.upper()
    elif roll < 0.3:
        text = text.lower()
    if rng.random() < 0.3:
        text = rng.choice(["the ", "The ", "a ", "an ", ""]) + text
    if rng.random() < 0.3:
        text = text + rng.choice(PUNCT)
    if rng.random() < 0.2:
        text = unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKC"]), text)
    if rng.random() < 0.2:
        text = text.replace(" ", rng.choice(["_", "  ", "-", "\t"]))
    if rng.random() < 0.1:
        text = rng.choice(WORDS) + " " + text
    return text


def pairs(seed: int, n: int = 2400) -> list[tuple[str, list[str]]]:
    """``n`` random pairs plus the fixed adversarial ones, reproducibly."""
    rng = random.Random(seed)
    out = [(pred, list(golds)) for pred, golds in FIXED]
    while len(out) < n:
        prediction = _phrase(rng)
        golds = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            if rng.random() < 0.5:
                golds.append(_perturb(rng, prediction))
            else:
                golds.append(_phrase(rng))
        out.append((prediction, golds))
    return out
