"""Builds `disclosure_cue.json`, the weights and thresholds of the disclosure
rule's learned reading (`scanning/disclosure_cue.py`): a logistic regression
on the sentence encoder's vectors of the sentences the cue reads.

    .venv/bin/python -m memoryhub.scanning.build_disclosure_cue [--check]

Training text (nothing else is read):
- unsafe: the public corpus's **dev** split of system-prompt extraction in
  English, the team corpus's `prompt_disclosure` cases, the extraction
  wordings of `bench/scanner_wordings.py` and of the structure tests
  (`tests/memoryhub/test_scanner_structure.py`), and the team's training
  file `tests/scanner_corpus/disclosure_training.yaml`;
- benign: every benign case of the public **dev** split (prose, code, logs,
  notes in 30 languages, requests), of the team corpus, and the look-alikes
  of the wordings, of the structure tests and of the training file.
The held-out split is never loaded (`load("dev")`), nor are the sources in
`MEASURED_ONLY` (the sixth set), kept to measure the cue on wordings it never saw.

A text is read as the cue reads it: its sentences that pass the structure
(`disclosure_cue.units`). An unsafe text is a bag of such sentences, one of
which asks for the prompt: the first model learns from the texts with one
or two sentences, then each unsafe text contributes the sentence the model
scores highest, twice over (multiple-instance learning). An unsafe text
with no sentence the structure passes cannot be learned from and is
counted, not used.

Thresholds by five-fold cross-validation, each text scored by a model that
never saw it: `standalone` is the least score at which no more than 5 % of
the short look-alikes (the training file's and the wordings', written to be
hard) and 0.5 % of the other short benign texts score above it;
`in_document` the least at which none of the benign texts longer than
`STANDALONE_CHARS` does, and never below `standalone + DOCUMENT_MARGIN`.

Deterministic: build_learned's regression (full-batch gradient descent from
zeros on standardised features, classes balanced), 800 steps; `--check` rebuilds and compares
with the committed file within a tolerance, since the int8 encoder's last
digits can differ between CPUs (a test does the same).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from memoryhub.scanning.build_learned import fit_logistic

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("disclosure_cue.json")
# The regression is build_learned's (same rate), run longer and with a
# hundred times its L2: on the dev split's five folds, 0.1 lifts the public
# extraction prompts scored above the bars from 283 to 292 of 353 and all
# unsafe texts from 689 to 721 of 868 (0.03: 290; 0.3: 291; 1.0: 174), the
# look-alike and benign bars held as they are. Weights this small put scores
# on a scale about 2.6 times narrower.
STEPS = 800
L2 = 0.1
# One of the encoder's 384 dimensions is ~1e-8 in every vector: with
# build_learned's 1e-9 its weight would reach ~5e7 and int8 noise would move
# the score; with 1e-6 it stays ~3e3, a contribution of ~1e-5.
SPREAD_FLOOR = 1e-6
FOLDS = 5
ROUNDS = 2
MAX_LOOKALIKES_ABOVE = 0.05
MAX_BENIGN_ABOVE = 0.005
# Documents are many and long: none of the dev split's scores above the bar.
MAX_LONG_BENIGN_ABOVE = 0.0
# --check: how far a rebuild may drift (int8 activations on another CPU).
TOLERANCE = {"weights": 0.05, "thresholds": 0.15}
# Inside a document a sentence needs this much more than a request standing
# alone. (With the thirteenth pass's extraction prompts the cross-validated
# in-document bar fell from 5.1 to 2.6 and flagged 72 sentences in 31,497
# chunks of installed documentation where the bar before flagged 44; 4.5 over
# the standalone bar flagged about 40.) On the fourteenth pass's scale, 2.6
# times narrower, 2.0: the longest benign documents' own bar decides, and
# 104,411 chunks of installed documentation saw 348 texts flagged against 375
# before (read off those chunks, which are outside the corpus).
DOCUMENT_MARGIN = 2.0
# Extraction collections kept out of training, both splits, so that they
# measure the cue on wordings it never saw. The third set of the thirteenth
# pass was one through rules 2026.12.26 (trained on its dev half then, the cue
# flagged 11 more chunks of installed documentation); with the fourteenth
# pass's regularisation it flags none more, and it trains since 2026.12.27
# (docs/scanner.md, "Fourteenth pass"). A new collection's first run is taken
# before it joins. The sixth set (first run with rules 2026.12.30) stays out:
# trained on, it moved the standalone bar from 0.09 to -0.04 and ordinary
# requests ("Show your ID at the gate.", "Show me your work.") were flagged;
# untrained, it is a standing measure of wordings the cue never saw
# (docs/scanner.md, "Fifteenth pass").
MEASURED_ONLY: frozenset[str] = frozenset({"sixth_extraction"})


@dataclass(frozen=True)
class Text:
    text: str
    unsafe: bool
    source: str
    lookalike: bool = False


def training_texts() -> list[Text]:
    sys.path.insert(0, str(ROOT))
    from tests.scanner_corpus.public import load

    texts: list[Text] = []
    for case in load("dev"):
        if case.source in MEASURED_ONLY:
            continue
        if case.label == "benign":
            texts.append(Text(case.text, False, case.source))
        elif case.kind == "sysprompt" and case.lang == "en":
            texts.append(Text(case.text, True, case.source))
    corpus = ROOT / "tests" / "scanner_corpus"
    for name in ("unsafe.yaml", "benign.yaml", "holdout.yaml", "holdout2.yaml"):
        for entry in yaml.safe_load((corpus / name).read_text("utf-8")):
            if entry["label"] == "benign":
                texts.append(Text(entry["text"], False, "team"))
            elif entry["class"] == "prompt_disclosure":
                texts.append(Text(entry["text"], True, "team"))
    spec = importlib.util.spec_from_file_location("scanner_wordings", ROOT / "bench" / "scanner_wordings.py")
    assert spec is not None and spec.loader is not None
    wordings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordings)
    for name in sorted(vars(wordings)):
        value = getattr(wordings, name)
        if name.isupper() and isinstance(value, list) and "EXTRACTION" in name:
            texts += [Text(text, True, "wordings") for text in value]
        elif name.isupper() and isinstance(value, list) and "BENIGN" in name:
            texts += [Text(text, False, "wordings", lookalike=True) for text in value]
    texts += _structure_test_cases()
    for entry in yaml.safe_load((corpus / "disclosure_training.yaml").read_text("utf-8")):
        unsafe = entry["label"] == "unsafe"
        texts.append(Text(entry["text"], unsafe, "training file", lookalike=not unsafe))
    return texts


def _structure_test_cases() -> list[Text]:
    """The extraction wordings and their look-alikes that
    tests/memoryhub/test_scanner_structure.py holds as module-level lists,
    read without importing the test module: `*EXTRACTION*` lists are
    unsafe, `*LOOK_ALIKES*`, `*PASSES*` and `*DOCUMENTATION` lists benign
    look-alikes (the persona, override and changelog lists say nothing about
    extraction either way and are left out)."""
    source = (ROOT / "tests" / "memoryhub" / "test_scanner_structure.py").read_text("utf-8")
    texts: list[Text] = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        unsafe = "EXTRACTION" in name and "LOOK_ALIKES" not in name
        benign = name.endswith(("LOOK_ALIKES", "PASSES", "DOCUMENTATION", "_IN_NOTES"))
        if not (unsafe or benign):
            continue
        try:
            values = ast.literal_eval(node.value)
        except ValueError:
            continue
        texts += [Text(value, unsafe, "structure tests", lookalike=benign)
                  for value in values if isinstance(value, str)]  # fmt: skip
    return texts


class Bags:
    """Every training text's sentences as the cue reads them, embedded once."""

    def __init__(self, texts: list[Text]) -> None:
        from memoryhub.scanning import disclosure_cue
        from memoryhub.scanning.base import normalize

        self.texts = texts
        self.rows: list[list[int]] = []
        sentences: list[str] = []
        margins: list[float] = []
        for text in texts:
            found = disclosure_cue.units(normalize(text.text))
            self.rows.append(list(range(len(sentences), len(sentences) + len(found))))
            sentences += [unit.text for unit in found]
            margins += [unit.margin for unit in found]
        # A statement's score counts less by its margin, in training and in
        # the thresholds as in the scanner.
        self.margins = np.array(margins)
        self.vectors = disclosure_cue.embed(sentences).astype(np.float64)

    def fit(self, chosen: list[int]) -> tuple[np.ndarray, float]:
        """Multiple-instance learning over the texts in `chosen`."""
        unsafe = [i for i in chosen if self.texts[i].unsafe and self.rows[i]]
        benign = [row for i in chosen if not self.texts[i].unsafe for row in self.rows[i]]
        picked = [row for i in unsafe if len(self.rows[i]) <= 2 for row in self.rows[i]]
        weights, bias = self._fit_rows(picked, benign)
        for _ in range(ROUNDS):
            picked = [max(self.rows[i], key=lambda row: float(self.vectors[row] @ weights) - self.margins[row])
                      for i in unsafe]  # fmt: skip
            weights, bias = self._fit_rows(picked, benign)
        return weights, bias

    def _fit_rows(self, unsafe: list[int], benign: list[int]) -> tuple[np.ndarray, float]:
        features = self.vectors[unsafe + benign]
        labels = np.array([1.0] * len(unsafe) + [0.0] * len(benign))
        return fit_logistic(features, labels, steps=STEPS, floor=SPREAD_FLOOR, l2=L2)

    def text_scores(self, weights: np.ndarray, bias: float, which: list[int]) -> np.ndarray:
        """Each text's strongest sentence (−inf when the cue reads none)."""
        return np.array([max((float(self.vectors[row] @ weights + bias - self.margins[row]) for row in self.rows[i]),
                             default=-np.inf)
                         for i in which])  # fmt: skip


def _least_above(scores: np.ndarray, share: float) -> float:
    """The least threshold with at most `share` of `scores` above it."""
    finite = np.sort(scores[np.isfinite(scores)])[::-1]
    allowed = int(share * len(scores))
    return float(finite[allowed]) + 1e-3 if allowed < len(finite) else -np.inf


def build() -> dict[str, object]:
    from memoryhub.scanning import disclosure_cue

    texts = training_texts()
    bags = Bags(texts)
    folds = np.array([int(hashlib.sha256(t.text.encode()).hexdigest()[:4], 16) % FOLDS for t in texts])
    out_of_fold = np.full(len(texts), -np.inf)
    for fold in range(FOLDS):
        weights, bias = bags.fit([i for i in range(len(texts)) if folds[i] != fold])
        held = [i for i in range(len(texts)) if folds[i] == fold]
        out_of_fold[held] = bags.text_scores(weights, bias, held)
    short = np.array([len(t.text) <= disclosure_cue.STANDALONE_CHARS for t in texts])
    unsafe = np.array([t.unsafe for t in texts])
    lookalike = np.array([t.lookalike for t in texts])
    benign = ~unsafe
    standalone = max(_least_above(out_of_fold[benign & short & lookalike], MAX_LOOKALIKES_ABOVE),
                     _least_above(out_of_fold[benign & short & ~lookalike], MAX_BENIGN_ABOVE))
    in_document = max(standalone + DOCUMENT_MARGIN, _least_above(out_of_fold[benign & ~short], MAX_LONG_BENIGN_ABOVE))
    weights, bias = bags.fit(list(range(len(texts))))

    def above(mask: np.ndarray) -> str:
        bars = np.where(short, standalone, in_document)
        return f"{int((out_of_fold[mask] > bars[mask]).sum())}/{int(mask.sum())}"

    sources = sorted({t.source for t in texts if t.unsafe})
    read = np.array([bool(rows) for rows in bags.rows])
    return {
        "about": "scanning/disclosure_cue.py's weights; rebuilt by python -m memoryhub.scanning.build_disclosure_cue",
        "embedding": disclosure_cue.MODEL_NAME,
        "thresholds": {"standalone": round(standalone, 4), "in_document": round(in_document, 4)},
        "bias": round(bias, 6),
        "weights": [round(float(w), 6) for w in weights],
        "trained_on": {"unsafe": int((unsafe & read).sum()), "unsafe_not_read": int((unsafe & ~read).sum()),
                       "benign": int(benign.sum()), "sentences": len(bags.vectors)},
        "cross_validated": {
            "unsafe_above": {
                source: above(unsafe & np.array([t.source == source for t in texts])) for source in sources
            },
            "benign_short_lookalikes_above": above(benign & short & lookalike),
            "benign_short_above": above(benign & short & ~lookalike),
            "benign_long_above": above(benign & ~short),
        },
    }  # fmt: skip


def differences(built: dict[str, object], committed: dict[str, object]) -> list[str]:
    """What a rebuild changed beyond the tolerance."""
    found = []
    for name in ("weights",):
        new, old = np.array(built[name]), np.array(committed[name])
        if new.shape != old.shape or float(np.abs(new - old).max()) > TOLERANCE[name]:
            found.append(name)
    new_bars, old_bars = built["thresholds"], committed["thresholds"]
    assert isinstance(new_bars, dict) and isinstance(old_bars, dict)
    if any(abs(new_bars[k] - old_bars[k]) > TOLERANCE["thresholds"] for k in old_bars):
        found.append("thresholds")
    if built["trained_on"] != committed["trained_on"]:
        found.append("trained_on")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    built = build()
    if args.check:
        changed = differences(built, json.loads(OUT.read_text("utf-8")))
        if changed:
            sys.exit(f"{OUT.name} differs from a rebuild: {', '.join(changed)}")
        print(f"{OUT.name} is what the build makes")
        return
    OUT.write_text(json.dumps(built, indent=1) + "\n", "utf-8")
    print(json.dumps({k: built[k] for k in ("thresholds", "trained_on", "cross_validated")}, indent=1))


if __name__ == "__main__":
    main()
