"""The agreement parts of ``vouch eval premise``'s analysis: Cohen's κ between the two
evaluator judges (PremiseSQL §4.2.3) and the failure-mechanism tables (§4.4, App. C): the
eligibility stages, strict-consensus incidence, κ between the attribution judges and the
consensus coverage of App. C.4. Kept apart from :mod:`.premise` to keep modules small."""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

import numpy as np

from . import metrics as M
from . import premise_judges as J
from .datasets import FLAW_CODES


# (record id, setting) -> (the record, its measures), as :func:`.premise.analyse` builds it
Measured = dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]


def judge_agreement(measured: Measured, settings: list[str]) -> dict[str, Any]:
    """Cohen's κ between the two evaluators per label (App. B.2, §4.2.3), over the flawed-question
    replies both judged validly: all settings pooled (as the paper reports it) and per setting."""
    names: list[str] = []
    pairs: dict[str, list[list[dict[str, Any]]]] = {}
    malformed = forced = 0
    for (_, setting), (r, m) in measured.items():
        if r["label"] != "flawed" or m.get("malformed") or "judges" not in m:
            continue
        labels = m["judges"]
        names = names or [j.get("judge") for j in labels]
        malformed += sum(1 for j in labels if "malformed" in j)
        if m.get("judge_malformed"):
            continue
        forced += sum(1 for j in labels if j.get("type_forced"))
        pairs.setdefault(setting, []).append(labels)
    pooled = [p for s in settings for p in pairs.get(s, [])]

    def kappas(rows: list[list[dict[str, Any]]]) -> dict[str, float]:
        out: dict[str, float] = {"n": len(rows)}
        for key in ("sql", "det", "type"):
            a, b = [x[key] for x, _ in rows], [y[key] for _, y in rows]
            out[key] = M.cohen_kappa(a, b) if rows else float("nan")
            out[f"{key}_agree"] = float(np.mean([u == v for u, v in zip(a, b)])) if rows else float("nan")
        return out

    return {"names": names, "malformed_judgements": malformed, "type_forced": forced,
            "kappa": {"all": kappas(pooled), **{s: kappas(pairs.get(s, [])) for s in settings}}}


MECHANISM_SAMPLE = 250  # App. C.3: responses sampled per dataset–model combination
SAMPLE_SEED = 42


def stratified_sample(records: list[dict[str, Any]], quota: int, *, seed: int = SAMPLE_SEED) -> list[dict[str, Any]]:
    """PremiseSQL App. C.3's attribution sample: ``quota`` records (all when there are no
    more), stratified by prompting setting × source error category (E1–E4). Every nonempty
    stratum gets one, the rest of the quota goes in proportion to stratum size by the
    largest-remainder method, and within a stratum records are taken in the order of the
    SHA-256 of ``"{seed}:{key}"`` — deterministic, whatever order the records arrive in."""
    import hashlib

    if quota <= 0 or len(records) <= quota:
        return list(records)
    strata: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        strata.setdefault((r["setting"], str(r.get("flaw") or "")[:2]), []).append(r)
    keys = sorted(strata)
    if len(keys) >= quota:  # more strata than places: one each from the largest strata
        keys = sorted(keys, key=lambda k: (-len(strata[k]), k))[:quota]
        share = {k: 1 for k in keys}
    else:
        rest, total = quota - len(keys), sum(len(strata[k]) for k in keys)
        exact = {k: rest * len(strata[k]) / total for k in keys}
        share = {k: 1 + int(exact[k]) for k in keys}
        left = quota - sum(share.values())
        for k in sorted(keys, key=lambda k: (-(exact[k] - int(exact[k])), k))[:left]:
            share[k] += 1
    out = []
    for k in keys:
        ranked = sorted(strata[k], key=lambda r: hashlib.sha256(f"{seed}:{r['key']}".encode()).hexdigest())
        out.extend(ranked[:min(share[k], len(ranked))])
    return out


def mechanisms(kept: list[dict[str, Any]], settings: list[str], paired: set[str], *, paper_settings: Container[str],
               stage_of: Callable[[dict[str, Any], bool], str | None],
               read_reply: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """The App. C pool (stage counts), and over the attributed outputs: strict-consensus
    incidence per mechanism, per setting and per source error type, Cohen's κ between the two
    attribution judges per mechanism (binary coding) and the consensus coverage of App. C.4."""
    # The record readers come from :mod:`.premise` (the caller), which imports this module.
    stages = {s: dict.fromkeys(J.STAGES, 0) for s in settings if s in paper_settings}
    rows: list[dict[str, Any]]
    names: list[str]
    rows, names, malformed, dropped = [], [], 0, 0
    for r in kept:
        stage = stage_of(r, r["pair_id"] in paired)
        if stage is None or r["setting"] not in stages:
            continue
        stages[r["setting"]][stage] += 1
        if stage != "eligible" or "attributions" not in r:
            continue
        reply = read_reply(r)
        got = [J.read_attribution(a.get("raw"), question=r["question"], reason=reply.get("reason") or "",
                                  sql=reply.get("sql"), shown_schema=r.get("shown_schema") or "")
               for a in r["attributions"]]
        names = names or [a.get("judge") for a in r["attributions"]]
        if len(got) != 2 or any("malformed" in g for g in got):
            malformed += 1
            continue
        dropped += sum(len(g["dropped"]) for g in got)
        a, b = got[0]["labels"], got[1]["labels"]
        rows.append({"setting": r["setting"], "flaw": r["flaw"], "a": a, "b": b,
                     "both": {m: a[m] & b[m] for m in J.MECHANISMS}})
    n = len(rows)

    def incidence(subset: list[dict[str, Any]]) -> dict[str, Any]:
        k = len(subset)
        return {"n": k, **{m: {"count": sum(x["both"][m] for x in subset),
                               "share": sum(x["both"][m] for x in subset) / k if k else float("nan")}
                           for m in J.MECHANISMS}}

    kappa = {m: M.cohen_kappa([x["a"][m] for x in rows], [x["b"][m] for x in rows]) if rows else float("nan")
             for m in J.MECHANISMS}
    finite = [v for v in kappa.values() if np.isfinite(v)]
    none_a = [not any(x["a"].values()) for x in rows]
    none_b = [not any(x["b"].values()) for x in rows]
    no_consensus = [not any(x["both"].values()) for x in rows]
    return {
        "judges": names, "stages": stages, "attributed": n, "attribution_malformed": malformed,
        "evidence_dropped": dropped,
        "all": incidence(rows),
        "by_setting": {s: incidence([x for x in rows if x["setting"] == s]) for s in stages},
        "by_flaw": {c: incidence([x for x in rows if x["flaw"] == c]) for c in FLAW_CODES
                    if any(x["flaw"] == c for x in rows)},
        "kappa": {**kappa, "macro": float(np.mean(finite)) if len(finite) == len(kappa) else float("nan")},
        "coverage": {
            "no_consensus_label": sum(no_consensus),
            "only_first_judge": sum(1 for i in range(n) if no_consensus[i] and none_b[i] and not none_a[i]),
            "only_second_judge": sum(1 for i in range(n) if no_consensus[i] and none_a[i] and not none_b[i]),
            "disjoint": sum(1 for i in range(n) if no_consensus[i] and not none_a[i] and not none_b[i]),
            "jointly_none": sum(1 for i in range(n) if none_a[i] and none_b[i]),
        },
    }


__all__ = ["judge_agreement", "mechanisms"]
