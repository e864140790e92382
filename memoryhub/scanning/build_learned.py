"""Builds `learned.json`, the weights of the structure model's learned cue
(`scanning/learned.py`): a logistic regression on wordllama's 256-dimension
embeddings, trained only on text that is not held out.

    .venv/bin/python -m memoryhub.scanning.build_learned [--check]

Training text (nothing else is read):
- unsafe: the public corpus's **dev** split of persona, in-the-wild and
  technique jailbreaks (those marked harmless count as benign), and the
  team corpus's `role_hijack` and `prompt_injection` cases (`unsafe.yaml`);
- benign: every benign case of the public **dev** split (long prose, code,
  logs, notes in 30 languages, requests) and of the team corpus
  (`benign.yaml`), and those short notes joined five at a time into long
  ones (paragraphs and lists, per language).
The held-out split is never loaded (`load("dev")`), nor are the team's own
hold-out files. Documents with an injected instruction (`injected_note`)
are left out on both sides: the rules read those. So is text shorter than
the cue ever reads (`structure.LEARNED_MIN_CHARS`).

Deterministic: full-batch gradient descent from zeros, fixed steps, class
weights balanced, the result rounded; `--check` rebuilds and compares with
the committed file (a test does the same). The threshold is chosen by
five-fold cross-validation: the least score at which no more than 0.5 % of
benign prose out of fold scores above it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("learned.json")
STEPS = 600
RATE = 0.5
L2 = 1e-3
FOLDS = 5
MAX_BENIGN_PROSE_ABOVE = 0.005


# Sources added after the committed weights were trained (rules 2026.12.8,
# issue 19): their first held-out run measured the cue as it was, and
# retraining on them is a change of its own, not part of adding data.
NOT_TRAINED_ON = frozenset(("spikee_sysmsg", "psfuzz_templates", "python_reference"))


def training_set() -> tuple[list[str], list[int], list[str]]:
    sys.path.insert(0, str(ROOT))
    from tests.scanner_corpus.public import load

    texts: list[str] = []
    labels: list[int] = []
    kinds: list[str] = []
    for case in load("dev"):
        if case.kind in ("injected_note", "markup_exfil", "sysprompt") or case.source in NOT_TRAINED_ON:
            continue
        unsafe = case.label == "unsafe" and not case.harmless
        texts.append(case.text)
        labels.append(int(unsafe))
        kinds.append(case.kind if not unsafe else "jailbreak")
    corpus = ROOT / "tests" / "scanner_corpus"
    for name, unsafe_classes in (("unsafe.yaml", ("role_hijack", "prompt_injection")), ("benign.yaml", ())):
        for entry in yaml.safe_load((corpus / name).read_text("utf-8")):
            if entry["label"] == "unsafe" and entry["class"] not in unsafe_classes:
                continue
            texts.append(entry["text"])
            labels.append(int(entry["label"] == "unsafe"))
            kinds.append("jailbreak" if entry["label"] == "unsafe" else "team_" + entry["class"])
    # Long ordinary notes in every language: the short benign notes and
    # lines joined five at a time, as paragraphs and as lists (a memory file
    # is many notes; alone, a note is shorter than the cue reads).
    groups: dict[str, list[str]] = {}
    for case in load("dev"):
        if case.source in NOT_TRAINED_ON:
            continue
        if case.label == "benign" and case.kind == "note" and len(case.text) < 200:
            groups.setdefault(case.lang, []).append(case.text)
    for entry in yaml.safe_load((corpus / "benign.yaml").read_text("utf-8")):
        groups.setdefault("team-" + entry["lang"], []).append(entry["text"])
    for _lang, notes in sorted(groups.items()):
        for start in range(0, len(notes) - 2, 5):
            five = notes[start : start + 5]
            for joined in (" ".join(five), "- " + "\n- ".join(five)):
                texts.append(joined)
                labels.append(0)
                kinds.append("joined notes")
    # The cue reads only text this long (structure.LEARNED_MIN_CHARS).
    from memoryhub.scanning.structure import LEARNED_MIN_CHARS

    keep = [i for i, text in enumerate(texts) if len(text) >= LEARNED_MIN_CHARS]
    return [texts[i] for i in keep], [labels[i] for i in keep], [kinds[i] for i in keep]


def fit_logistic(
    raw: np.ndarray, labels: np.ndarray, *, steps: int = STEPS, floor: float = 1e-9, l2: float = L2
) -> tuple[np.ndarray, float]:
    """Class-balanced logistic regression by full-batch gradient descent from
    zeros (deterministic); also the disclosure cue's (build_disclosure_cue).
    `floor` is added to each feature's spread before it divides."""
    # Trained on standardised features; the scaling is folded back into the
    # weights, so the runtime projects the raw embedding.
    mean = raw.mean(axis=0)
    spread = raw.std(axis=0) + floor
    features = (raw - mean) / spread
    weights = np.zeros(features.shape[1], dtype=np.float64)
    bias = 0.0
    positives = max(1, int(labels.sum()))
    negatives = max(1, len(labels) - positives)
    sample = np.where(labels == 1, len(labels) / (2 * positives), len(labels) / (2 * negatives))
    for _ in range(steps):
        scores = 1.0 / (1.0 + np.exp(-(features @ weights + bias)))
        error = (scores - labels) * sample
        weights -= RATE * (features.T @ error / len(labels) + l2 * weights)
        bias -= RATE * float(error.mean())
    return weights / spread, bias - float((weights * mean / spread).sum())


def build() -> dict[str, object]:
    from memoryhub.scanning import learned

    texts, label_list, kinds = training_set()
    features = np.array([learned.embed(text) for text in texts], dtype=np.float64)
    labels = np.array(label_list, dtype=np.float64)
    # Threshold from folds: each case scored by a model that never saw it.
    folds = np.array([int(hashlib.sha256(t.encode()).hexdigest()[:4], 16) % FOLDS for t in texts])
    out_of_fold = np.zeros(len(texts))
    for fold in range(FOLDS):
        held = folds == fold
        weights, bias = fit_logistic(features[~held], labels[~held])
        out_of_fold[held] = features[held] @ weights + bias
    prose = np.array([k == "prose" for k in kinds])
    benign = labels == 0
    ranked = np.sort(out_of_fold[prose & benign])[::-1]
    allowed = int(MAX_BENIGN_PROSE_ABOVE * len(ranked))
    threshold = float(max(0.0, ranked[allowed] + 1e-3)) if len(ranked) else 0.0
    weights, bias = fit_logistic(features, labels)
    unsafe = labels == 1

    def above(mask: np.ndarray) -> str:
        return f"{int((out_of_fold[mask] > threshold).sum())}/{int(mask.sum())}"

    return {
        "about": "scanning/learned.py's weights; rebuilt by python -m memoryhub.scanning.build_learned",
        "embedding": learned.MODEL_NAME,
        "chars": learned.CHARS,
        "threshold": round(threshold, 4),
        "bias": round(bias, 6),
        "weights": [round(float(w), 6) for w in weights],
        "trained_on": {"unsafe": int(unsafe.sum()), "benign": int(benign.sum())},
        "cross_validated": {
            "unsafe_above": above(unsafe),
            "benign_above": above(benign),
            "benign_prose_above": above(prose & benign),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    built = json.dumps(build(), indent=1) + "\n"
    if args.check:
        if OUT.read_text("utf-8") != built:
            sys.exit(f"{OUT.name} differs from a rebuild")
        print(f"{OUT.name} is what the build makes")
        return
    OUT.write_text(built, "utf-8")
    print(json.loads(built)["cross_validated"], "threshold", json.loads(built)["threshold"])


if __name__ == "__main__":
    main()
