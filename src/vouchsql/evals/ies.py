"""The IES paper's tables from confidence records (``vouch eval confidence --paper ies``).

../shared/papers/002 ("Does a governed confidence score know when a text-to-SQL answer is
right?"): Table 4 (the rules, with the fitted variant), Table 5 (the pre-registered
hypotheses H1–H4), Table 2 (single changes to the designed score), Table 7 (the designed
score rebuilt one step at a time), Table 8 (gate decisions by correctness) and Table 9
(calibration). Everything here is recomputed from the records' stored evidence — no SQL, no
model call — so ``--replay`` reproduces every cell.

What Vouch cannot measure is shown as such, never filled in: the claim judge (the
"unsupported claim" rows of Table 2, the judge issues of agreement-first's caps) and COMPLETE's
judge run only on ``--model`` runs; elsewhere the claim rows say "not measured" and COMPLETE
comes from the deterministic question–SQL alignment, named in the report.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np

from ..answer import CheckResult
from ..errors import UserInputError
from ..score import JUDGE_CLAIMS, ScoreInput, complete_source, components, gate, score
from . import metrics as M
from .report import Item, Section, Table, Text, pct, with_ci

# Table 2: one change to the designed score each (the claim rows need the claim judge's records).
ABLATIONS: tuple[tuple[str, dict[str, Any] | str], ...] = (
    ("None (designed)", {}),
    ("Drop GROUNDED", {"drop": ("grounded",)}),
    ("Drop SCHEMA", {"drop": ("schema",)}),
    ("Drop COMPLETE", {"drop": ("complete",)}),
    ("Drop SAFETY", {"drop": ("safety",)}),
    ("SAFETY without L2", {"safety": "l1"}),
    ("SAFETY as mean instead of min", {"safety": "mean"}),
    ("No thin-evidence cap", {"thin_cap": False}),
    ("No hard caps", {"hard_caps": False}),
    ("Unsupported claims capped only when about the answer", {"claims": "answer"}),
    ("Unsupported claims ignored", {"claims": "ignore"}),
    ("Agreement alone, relaxed rows", "agreement_alone"),
)
# Table 7: the designed score rebuilt one step at a time.
STEPS: tuple[tuple[str, dict[str, Any] | str], ...] = (
    ("L2 alone", "l2"),
    ("min(L1, L2)", "safety"),
    ("Weighted mean", {"hard_caps": False, "thin_cap": False}),
    ("With caps (designed)", {}),
)
# Table 4's rows, in the paper's order, and the names it gives them.
TABLE4 = (("designed", "Designed"), ("agreement_first", "Agreement-first (primary)"), ("v3", "v3 (empty result)"),
          ("agreement_alone", "Agreement alone"), ("v2", "v2 rule"), ("fitted", "Fitted (exploratory)"))
NEEDED_RULES = ("designed", "v2", "agreement_alone", "agreement_first", "v3")
FEATURES = ("agreement", "l2", "l1", "grounded", "schema", "complete", "veto", "cap", "empty_result")
H3_MIN_FIRED, H3_GAP = 10, 0.30  # IES §6.1: tested only if it fires on 10 or more answers; 30 points below
H2_MARGIN = 0.02  # pass accuracy not lower by more than 2 points


def score_input(record: dict[str, Any], checks: list[CheckResult], check_set: str,
                options: dict[str, Any] | None = None) -> ScoreInput:
    return ScoreInput(agreement=record["agreement"] or 0.0, k=record["k"], checks=checks,
                      strict_clusters=list(record["strict_clusters"]), check_set=check_set, options=options or {})


def variant_scores(kept: list[dict[str, Any]], parsed: list[list[CheckResult]], check_set: str,
                   variant: dict[str, Any] | str) -> np.ndarray:
    """Scores of one Table 2/7 variant: designed with ``options``, another rule's name, or a
    component (``l2``: the entropy layer; ``safety``: min(L1, L2))."""
    out: list[float] = []
    for r, checks in zip(kept, parsed):
        if isinstance(variant, dict):
            out.append(score("designed", score_input(r, checks, check_set, variant)).score)
        elif variant in ("l2", "safety"):
            c: dict[str, Any] = components(score_input(r, checks, check_set))  # L1 is always a float
            l2 = c["l2"] if c["l2"] is not None else c["l1"]  # one sample: no L2, SAFETY is L1 (as designed)
            out.append(l2 if variant == "l2" else min(c["l1"], l2))
        else:
            out.append(score(variant, score_input(r, checks, check_set)).score)
    return np.array(out, dtype=float)


def _share_with_shown(clusters: list[int], k: int) -> float:
    """A under one clustering: the share of the K samples in the shown answer's (the first) cluster."""
    return sum(c == clusters[0] for c in clusters) / k if clusters and k else 0.0


def _entropy_layer(clusters: list[int]) -> float:
    """L2 = 1 − H(π)/log K over the given clusters (1 with one sample)."""
    k = len(clusters)
    if k < 2:
        return 1.0
    # K ≥ 2: L2 is measured.
    return cast(float, components(ScoreInput(agreement=0.0, k=k, checks=[], strict_clusters=list(clusters)))["l2"])


def summary(s: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    g = M.gate_quantities([gate(v) for v in s], y)
    return {"auroc": M.auroc(s, y), "pass_accuracy": g["pass_accuracy"], "pass_share": g["pass_share"]}


# ---------------------------------------------------------------------------------------
# The fitted variant (IES §4.4): logistic regression, whole-database cross-fitting
# ---------------------------------------------------------------------------------------
def feature_matrix(kept: list[dict[str, Any]], parsed: list[list[CheckResult]], check_set: str) -> np.ndarray:
    """One row per answer: A, L2 (A with one sample), L1, GROUNDED, SCHEMA, COMPLETE (1 where
    unmeasured: an unmeasured term is no evidence against), and 0/1 for veto, cap, empty
    result. The paper does not list its features; these are the score's own components."""
    rows = []
    for r, checks in zip(kept, parsed):
        c: dict[str, Any] = components(score_input(r, checks, check_set))
        c["l2"] = c["agreement"] if c["l2"] is None else c["l2"]
        rows.append([1.0 if c[f] is None else float(c[f]) for f in FEATURES])
    return np.array(rows, dtype=float).reshape(len(rows), len(FEATURES))


def cross_fitted(x: np.ndarray, y: np.ndarray, groups: Sequence[str], *, splits: int = 20,
                 seed: int = 0) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Out-of-fold probabilities averaged over ``splits`` random halvings of the databases:
    each split fits on one half of the databases and scores the other, both ways, so no
    database is on both sides of a fit. A split where a training half holds one class only
    is skipped (and counted). Returns (scores or None, a note of what was done)."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return None, {"why": "scikit-learn is not installed: pip install 'vouchsql[eval]'"}
    names = sorted(set(groups))
    if len(names) < 2:
        return None, {"why": f"whole-database cross-fitting needs answers from two or more databases "
                             f"({len(names)} here)"}
    group = np.array([names.index(g) for g in groups])
    rng = np.random.default_rng(seed)
    total, used, skipped = np.zeros(len(y)), 0, 0
    for _ in range(splits):
        order = rng.permutation(len(names))
        first = np.isin(group, order[: len(names) // 2])
        fold_scores = np.zeros(len(y))
        ok = True
        for train in (first, ~first):
            if len(np.unique(y[train])) < 2:
                ok = False
                break
            model = LogisticRegression(max_iter=1000).fit(x[train], y[train])
            fold_scores[~train] = model.predict_proba(x[~train])[:, 1]
        if ok:
            total += fold_scores
            used += 1
        else:
            skipped += 1
    note = {"splits": splits, "used": used, "skipped_one_class": skipped, "databases": len(names),
            "features": list(FEATURES), "seed": seed}
    if not used:
        return None, {**note, "why": "every split left a training half with one class only"}
    return np.round(total / used, 4), note


# ---------------------------------------------------------------------------------------
# The hypotheses (IES §6.1, Table 5)
# ---------------------------------------------------------------------------------------
def hypotheses(rules: dict[str, Any], paired: dict[str, Any], empty: dict[str, Any], accuracy: float,
               lower: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Table 5's rows. ``lower``: the truncation policy's bound (IES §3.3: pairs left open by
    a cut-off result counted as disagreeing), reported beside H1 as the paper does."""
    out = []
    d = paired.get("agreement_first-designed")
    if d is not None:
        lo = d["ci"][0]
        observed = f"AUROC difference {_signed(d['diff'])} (95% CI {_signed(d['ci'][0])} to {_signed(d['ci'][1])})"
        if lower and lower.get("answers"):
            n = lower["answers"]
            observed += (f"; with truncated pairs counted as disagreeing ({n} answer{'s' if n != 1 else ''}), "
                         f"agreement-first AUROC {_f(lower['agreement_first_auroc'])}")
        out.append({"id": "H1", "observed": observed, "verdict": "Pass" if lo is not None and lo > 0 else "Fail"})
    af, de = rules.get("agreement_first"), rules.get("designed")
    if af and de:
        fewer = _lt(af["correct_withheld"], de["correct_withheld"])
        kept = (af["pass_accuracy"] is not None and de["pass_accuracy"] is not None
                and af["pass_accuracy"] >= de["pass_accuracy"] - H2_MARGIN)
        out.append({"id": "H2", "observed": f"correct withheld {_p(af['correct_withheld'])} vs "
                                            f"{_p(de['correct_withheld'])}; pass accuracy {_p(af['pass_accuracy'])} vs "
                                            f"{_p(de['pass_accuracy'])}",
                    "verdict": "Pass" if fewer and kept else "Fail"})
    fired, right = empty["fired"], empty["right"]
    if fired < H3_MIN_FIRED:
        out.append({"id": "H3", "observed": f"empty result fired on {fired} answers (fewer than {H3_MIN_FIRED})",
                    "verdict": "Not tested"})
    else:
        acc = right / fired
        gap = accuracy - acc
        out.append({"id": "H3", "observed": f"empty result fired on {fired} answers; right {_p(acc)} of the time vs "
                                            f"{_p(accuracy)} overall, {100 * gap:.1f} points below",
                    "verdict": "Pass" if gap >= H3_GAP else "Fail"})
    order = ["designed", "agreement_alone", "agreement_first", "v3"]
    if all(r in rules for r in order):
        a = [rules[r]["auroc"] for r in order]
        held = None not in a and a[0] < a[1] <= a[2] <= a[3]
        parts = [f"{order[0]} {_f(a[0])}"]
        for name, prev, cur in zip(order[1:], a, a[1:]):
            rel = "?" if None in (prev, cur) else "<" if prev < cur else "=" if prev == cur else ">"
            parts.append(f"{rel} {name} {_f(cur)}")
        ranked = " ".join(parts)
        out.append({"id": "H4", "observed": ranked, "verdict": "As predicted" if held else "Not as predicted"})
    return out


def _lt(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a < b


def _p(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _signed(x: Any) -> str:
    return "—" if x is None else f"{x:+.3f}"


def analyse_ies(kept: list[dict[str, Any]], parsed: list[list[CheckResult]], y: np.ndarray, check_set: str,
                scores: dict[str, np.ndarray], *, splits: int = 20,
                seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """The IES extras: (metrics, extra score arrays for the bootstrap: fitted and L2)."""
    missing = [r for r in NEEDED_RULES if r not in scores]
    if missing:
        raise UserInputError(f"--paper ies needs the rules {', '.join(NEEDED_RULES)}; missing {', '.join(missing)}")
    # The claim rows differ from the design only where the claim judge ran (--model runs).
    claim_results = [next((c for c in checks if c.name == JUDGE_CLAIMS and "claims" in c.evidence), None)
                     for checks in parsed]
    judged = any(c is not None for c in claim_results)
    claims = {"judged": sum(c is not None for c in claim_results),
              "any": sum(bool(c is not None and c.evidence["claims"]) for c in claim_results),
              "about_answer": sum(bool(c is not None and c.evidence.get("about_answer")) for c in claim_results)}
    ablations: dict[str, dict[str, Any] | None] = {}
    for label, variant in ABLATIONS:
        if isinstance(variant, dict) and "claims" in variant and not judged:
            ablations[label] = None
        else:
            ablations[label] = summary(variant_scores(kept, parsed, check_set, variant), y)
    steps = {label: summary(variant_scores(kept, parsed, check_set, variant), y)["auroc"] for label, variant in STEPS}
    fitted, fit_note = cross_fitted(feature_matrix(kept, parsed, check_set), y, [str(r["db"]) for r in kept],
                                    splits=splits, seed=seed)
    # Proposition 1 in practice (IES §8): the statistic changed, the matching held fixed —
    # A and the entropy both over strict clusters (primary), and both by relaxed matching
    # with greedy clusters in sample order (secondary; the records' candidate clusters).
    extra = {"l2_alone": variant_scores(kept, parsed, check_set, "l2"),
             "a_strict": np.array([_share_with_shown(r["strict_clusters"], r["k"]) for r in kept], dtype=float)}
    relaxed = [[c.get("cluster") for c in r.get("candidates") or []] for r in kept]
    if kept and all(len(c) == r["k"] and None not in c for c, r in zip(relaxed, kept)):
        extra["l2_relaxed"] = np.array([_entropy_layer(c) for c in relaxed], dtype=float)
    if fitted is not None:
        extra["fitted"] = fitted
    fired = [bool(components(score_input(r, c, check_set))["empty_result"]) for r, c in zip(kept, parsed)]
    empty = {"fired": int(sum(fired)), "right": int(sum(bool(f and yy) for f, yy in zip(fired, y)))}
    sources = {"judge": 0, "alignment": 0, "unmeasured": 0}
    retrieve = 0
    for r, checks in zip(kept, parsed):
        sources[complete_source(checks) or "unmeasured"] += 1
        retrieve += components(score_input(r, checks, check_set))["retrieve"] is not None
    # The truncation bound (IES §3.3): A with every undetermined pair counted as disagreeing.
    bounded = [{**r, "agreement": r["agreement_lower"]} if r.get("truncated_pairs") and r.get("agreement_lower")
               is not None else r for r in kept]
    lower = {"answers": sum(bool(r.get("truncated_pairs")) for r in kept),
             "agreement_first_auroc": M.auroc(variant_scores(bounded, parsed, check_set, "agreement_first"), y)}
    return {"ablations": ablations, "steps": steps, "fitted": fit_note, "empty_result": empty,
            "complete_sources": sources, "retrieve_measured": retrieve, "truncation_lower_bound": lower,
            "claims": claims}, extra


# ---------------------------------------------------------------------------------------
# The tables, in the paper's layout
# ---------------------------------------------------------------------------------------
def _row4(label: str, m: dict[str, Any]) -> list[Any]:
    return [label, with_ci(m["auroc"], m["auroc_ci"]), pct(m["pass_accuracy"]), pct(m["pass_share"]),
            pct(m["correct_withheld"]), pct(m["wrong_withheld"])]


def sections(metrics: dict[str, Any]) -> list[Section]:
    ies, rules = metrics["ies"], metrics["rules"]
    src = ies["complete_sources"]
    fit = ies["fitted"]
    rows4 = []
    for name, label in TABLE4:
        if name == "fitted":
            rows4.append(_row4(label, fit["metrics"]) if "metrics" in fit else
                         [label, f"not available: {fit.get('why')}", "—", "—", "—", "—"])
        else:
            rows4.append(_row4(label, rules[name]))
    t4: list[Item]
    t4 = [Table(["Score", "AUROC (95% CI)", "pass accuracy", "pass share", "Correct withheld", "Wrong withheld"],
                rows4, caption=f"IES Table 4 layout: {metrics['n']} labelled answers, accuracy "
                               f"{pct(metrics['accuracy'])}; checks: {metrics['check_set']}."),
          Text(f"COMPLETE measured by the judge model on {src['judge']} answers, by the deterministic question–SQL "
               f"alignment on {src['alignment']}, unmeasured on {src['unmeasured']}. RETRIEVE "
               + ("not measured (IES §3.2)" if metrics["check_set"] == "paper" else
                  f"measured by the alignment on {ies['retrieve_measured']}")
               + ". " + (f"The claim judge read {ies['claims']['judged']} answers: an unsupported claim in "
                         f"{ies['claims']['any']}, about the answer in {ies['claims']['about_answer']}."
                         if ies.get("claims", {}).get("judged") else
                         "No claim judge ran (it runs on --model runs): the unsupported-claim caps cannot fire."))]
    if "metrics" in fit:
        t4.append(Text(f"Fitted: logistic regression on {', '.join(fit['features'])}; whole-database cross-fitting "
                       f"over {fit['splits']} random halvings of {fit['databases']} databases (seed {fit['seed']}; "
                       f"{fit['used']} used, {fit['skipped_one_class']} skipped for a one-class training half); "
                       f"out-of-fold scores only."))
    hyp = [[h["id"], h["observed"], h["verdict"]] for h in ies["hypotheses"]]
    a_l2 = ies["a_minus_l2"]
    relaxed = ies.get("a_minus_l2_relaxed")
    ablation_rows = [[label, "not measured (no claim judge ran: --model runs with the judge)", "—", "—"]
                     if m is None else
                     [label, with_ci(m["auroc"], None), pct(m["pass_accuracy"]), pct(m["pass_share"])]
                     for label, m in ies["ablations"].items()]
    steps = ies["steps"]
    gate_rows = [[label] + [f"{rules[name]['gate'][g][0]} / {rules[name]['gate'][g][1]}"
                            for g in ("pass", "flag", "abstain")]
                 for name, label in (("designed", "Designed"), ("agreement_alone", "Agreement alone"),
                                     ("agreement_first", "Agreement-first"))]
    cal = [[label] + [_f(rules[name]["ece"]), _f(rules[name]["brier"])]
           for name, label in (("designed", "Designed"), ("agreement_alone", "Agreement alone"),
                               ("agreement_first", "Agreement-first"))]
    return [
        Section("IES Table 4: the rules", t4),
        Section("IES Table 5: the pre-registered hypotheses", [
            Table(["", "Observed", "Verdict"], hyp),
            Text("H1: the paired 95% interval of AUROC(agreement-first) − AUROC(designed) lies above 0. H2: "
                 "agreement-first withholds fewer correct answers and its pass accuracy is not lower by more than "
                 f"2 points. H3: accuracy when the empty result fires is at least 30 points below overall (tested "
                 f"only on {H3_MIN_FIRED} or more). H4 (descriptive, point estimates): designed < agreement alone ≤ "
                 "agreement-first ≤ v3."),
        ]),
        Section("IES Table 2: single changes to the designed score", [
            Table(["Change", "AUROC", "pass acc.", "pass share"], ablation_rows),
            Text(f"Agreement with the shown answer minus the entropy L2 (Proposition 1), the matching held fixed: "
                 f"strict (same columns, same multiset of rows) {with_ci(a_l2['diff'], a_l2['ci'], signed=True)} "
                 "AUROC; relaxed (A as scored, L2 over greedy clusters in sample order, secondary) "
                 + (with_ci(relaxed["diff"], relaxed["ci"], signed=True) + " AUROC." if relaxed else
                    "not available (the records hold no candidate clusters).")),
        ]),
        Section("IES Table 7: the designed score rebuilt one step at a time", [
            Table(list(steps), [[with_ci(v, None) for v in steps.values()]]),
        ]),
        Section("IES Table 8: gate decisions by correctness (right / wrong)", [
            Table(["Score", "pass", "flag", "abstain"], gate_rows),
        ]),
        Section("IES Table 9: calibration", [
            Table(["Score", "ECE", "Brier"], cal, caption="ECE over 10 equal-width bins."),
        ]),
    ]


def _f(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}"


__all__ = ["ABLATIONS", "STEPS", "TABLE4", "analyse_ies", "cross_fitted", "hypotheses", "sections", "variant_scores"]
