"""The report of ``vouch eval premise`` (:mod:`vouchsql.evals.premise`), from its metrics and
records alone: the tables per setting, per flaw code and between settings, and how the
measures depart from PremiseSQL's."""

from __future__ import annotations

from typing import Any

from .datasets import FLAW_CODES, FLAW_NAMES
from .premise_judges import MECHANISMS
from .report import Figure, Item, Report, Section, Table, Text, bars_png, manifest_section, with_ci


def build_report(metrics: dict[str, Any], records: list[dict[str, Any]], manifest: dict[str, Any], *,
                 replay_of: str | None = None) -> Report:
    settings = list(metrics["settings"])
    boot = metrics["bootstrap"]
    intro: list[Item]
    intro = [Text(f"{metrics['n_flawed']} flawed questions and {metrics['n_original']} originals in "
                  f"{metrics['n_pairs']} pairs. Intervals: percentile bootstrap over question pairs, "
                  f"{boot['replicates']:,} resamples (seed {boot['seed']}); per flaw code, resampled within the code. "
                  "SQL is SQL behaviour normalised to [0, 1] (2 = complete abstention).")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}`: every number recomputed from the stored replies (no model call)."))
    judged = metrics.get("det_from") == "judges"
    if judged:
        names = " and ".join(f"`{n}`" for n in metrics["judges"]["names"]) or "two judges"
        intro.append(Text(f"SQL, DET and TYPE: judged from each response by {names} (PremiseSQL §3.5, App. B.2), "
                          "the mean of the two judges' labels. GEN and VAL: from the structured output."))
    else:
        intro.append(Text("SQL, DET and TYPE: **structured-output reading** (`--det-from structured`), not the "
                          "paper's two judges: DET is `is_valid = false` (Base: no SQL); TYPE is not measured for "
                          "the paper's settings."))
    flawed_rows, original_rows = [], []
    for s in settings:
        f, o = metrics["settings"][s]["flawed"], metrics["settings"][s]["original"]
        flawed_rows.append([s, with_ci(f["sql"], f["sql_ci"]), with_ci(f["det"], f["det_ci"]),
                            with_ci(f["type"], f["type_ci"]), with_ci(f["type_category"], f["type_category_ci"]),
                            " / ".join(str(x) for x in f["sql_levels"]), f["malformed"]])
        original_rows.append([s, with_ci(o["gen"], o["gen_ci"]), with_ci(o["val"], o["val_ci"]),
                              with_ci(o["ex"], o["ex_ci"]), with_ci(o["ex_given_gen"], None), o["malformed"]])
    sections = [
        Section("Flawed questions", [Table(["setting", "SQL", "DET", "TYPE", "TYPE (category)",
                                            "behaviour 0 / 1 / 2" + (" (judge labels)" if judged else ""),
                                            "malformed"], flawed_rows)]),
        Section("Original questions", [Table(["setting", "GEN", "VAL", "EX", "EX | GEN", "malformed"], original_rows),
                                       Text("EX: relaxed execution match with the gold SQL, abstention counted wrong "
                                            "(PremiseSQL App. B.7). Base has no is_valid (no VAL); Vouch's assess step "
                                            "writes no SQL (no EX).")]),
    ]
    vouch = metrics["settings"].get("vouch")
    if vouch and vouch["flawed"].get("as_interpretations"):
        sections[0].items.append(Text(f"Vouch answered {vouch['flawed']['as_interpretations']} flawed questions as two "
                                      "or more interpretations (valid by design, counted as not detected)."))
    series = {s: [(metrics["settings"][s]["by_flaw"].get(c) or {}).get("det") for c in FLAW_CODES] for s in settings}
    sections.append(Section("Per flaw code", [
        Table(["flaw", *settings], _per_flaw_rows(metrics, settings, "det"), caption="DET per flaw code (95% CI)."),
        Table(["flaw", *settings], _per_flaw_rows(metrics, settings, "type"), caption="TYPE per flaw code (95% CI)."),
        Figure("det_by_flaw", bars_png(list(FLAW_CODES), series, "Detection per flaw code", "DET"),
               "DET per flaw code and setting."),
    ]))
    paired_rows = []
    for name, entry in metrics["paired"].items():
        cells = [name]
        for m in ("sql", "det", "type", "gen", "val", "ex"):
            cells.append(with_ci(entry[m]["diff"], entry[m]["ci"], signed=True) if m in entry else "—")
        mc = [f"{k[8:].upper()} p = {entry[k]['p']:.3g}" for k in ("mcnemar_det", "mcnemar_gen") if k in entry]
        cells.append("; ".join(mc) or "—")
        paired_rows.append(cells)
    sections.append(Section("Paired differences between settings", [
        Table(["later − earlier", "ΔSQL", "ΔDET", "ΔTYPE", "ΔGEN", "ΔVAL", "ΔEX", "exact McNemar"], paired_rows),
        Text("Differences and their 95% intervals come from the same bootstrap resamples of question pairs."),
    ]))
    if judged:
        sections.extend(_judge_sections(metrics))
    sections.append(Section("How this departs from PremiseSQL", [Text(_departures(metrics, judged))]))
    errors = [r for r in records if r.get("error")]
    if errors:
        sections.append(Section("Model errors", [Text("\n".join(f"- {r['key']}: {r['error']}" for r in errors[:50]))]))
    skipped = [r for r in records if r.get("skipped")]
    if skipped:
        sections.append(Section("Skipped", [Text("\n".join(f"- {r['key']}: {r['skipped']}" for r in skipped[:50]))]))
    sections.append(manifest_section(manifest))
    return Report(title="Premise critique (PremiseSQL settings and Vouch's assess step)",
                  command=manifest.get("command"), intro=intro, sections=sections, manifest=manifest)



def _per_flaw_rows(metrics: dict[str, Any], settings: list[str], measure: str) -> list[list[str]]:
    rows = []
    for code in FLAW_CODES:
        row = [f"{code} {FLAW_NAMES[code]}"]
        for s in settings:
            e = metrics["settings"][s]["by_flaw"].get(code)
            row.append(with_ci(e[measure], e[f"{measure}_ci"], digits=2) if e else "—")
        rows.append(row)
    return rows


def _departures(metrics: dict[str, Any], judged: bool) -> str:
    lines = []
    if judged:
        lines.append("- SQL behaviour, DET and TYPE are the mean of two judge models' labels, as in the paper; the "
                     "judges are the models named above, not GPT-5.4 and Claude Opus 4.6. A reply one judge could "
                     "not score is left out of SQL, DET and TYPE and counted. For Vouch's assess step, which "
                     "writes no SQL, SQL behaviour is 2 when it stops the question and 0 when it passes it on.")
        lines.append("- Failure mechanisms: every eligible output is attributed (the paper sampled 8,000 of "
                     "27,573); E3.2 is included, since its reduced schema is recorded with each reply.")
    else:
        lines.append("- **Structured-output fallback** (`--det-from structured`): DET is `is_valid = false`, and "
                     "Base, which has no `is_valid`, detects only by abstaining (`sql` null); TYPE is not measured "
                     "for the paper's settings, whose prompts ask for no flaw code; SQL behaviour: 2 "
                     "no SQL, 1 SQL with `is_valid = false` or SQL that fails the statement gate or does not run, "
                     "0 otherwise. The paper's two judges read the whole response (`--judges`).")
    lines += [
        "- The paper's prompt texts are not in its appendix beyond \"The database schema is as follows: "
        "{schema}\"; the three setting prompts follow §3.4's description of each setting.",
        "- E3.2 questions keep their original's words; the model is shown the schema without the withheld "
        "tables or columns.",
        "- The paper's settings see the schema as CREATE TABLE statements; Vouch's assess step sees it as "
        "`vouch ask` shows it, with the data profile, and no recorded definitions or hint.",
        "- Malformed replies are left out of their setting's measures and counted; only the assess step gets a "
        "repair request (Vouch's own behaviour).",
    ]
    return "\n".join(lines)


def _k(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def _judge_sections(metrics: dict[str, Any]) -> list[Section]:
    j = metrics["judges"]
    rows = []
    for scope, k in j["kappa"].items():
        rows.append([scope, k["n"], _k(k["sql"]), _k(k["det"]), _k(k["type"]),
                     " / ".join("—" if k[f"{x}_agree"] is None else f"{k[f'{x}_agree']:.3f}"
                                for x in ("sql", "det", "type"))])
    out = [Section("Judge agreement", [
        Table(["replies", "n", "κ SQL behaviour", "κ Detection", "κ Type identification", "raw agreement S / D / T"],
              rows, caption="Cohen's κ between the two judges (PremiseSQL §4.2.3 reports 0.9737, 0.9100, 0.8586)."),
        Text(f"Judgements that could not be read: {j['malformed_judgements']}. TYPE forced to 0 where a judge said "
             f"DET = 0 (App. B.2): {j['type_forced']}.")])]
    mech = metrics.get("mechanisms") or {}
    stages = mech.get("stages") or {}
    if stages:
        stage_rows = [[s, *[c.get(name, 0) for name in next(iter(stages.values()))]] for s, c in stages.items()]
        items: list[Item]
        items = [Table(["setting", *next(iter(stages.values()))], stage_rows,
                       caption="Where each judged reply to a flawed question leaves the mechanism pool (App. C.2).")]
        if mech.get("attributed"):
            def row(label: str, inc: dict[str, Any]) -> list[Any]:
                return [label, inc["n"], *[("—" if inc[m]["share"] is None else f"{100 * inc[m]['share']:.2f}")
                                          for m in MECHANISMS]]
            heads = ["", "N", *[f"{m} {name}" for m, name in MECHANISMS.items()]]
            items.append(Table(heads, [row("all", mech["all"]), *[row(s, v) for s, v in mech["by_setting"].items()]],
                               caption="Strict-consensus incidence (%) by prompting setting."))
            items.append(Table(["Code", "Source error category", "N", *MECHANISMS],
                               [[c, FLAW_NAMES[c], v["n"], *[("—" if v[m]["share"] is None
                                                              else f"{100 * v[m]['share']:.2f}") for m in MECHANISMS]]
                                for c, v in mech["by_flaw"].items()],
                               caption="Strict-consensus incidence (%) by source error category (Table 15's layout)."))
            kap = mech["kappa"]
            cov = mech["coverage"]
            items.append(Text(
                "Cohen's κ between the attribution judges (" + " and ".join(f"`{n}`" for n in mech["judges"]) + "): "
                + ", ".join(f"{m} {_k(kap[m])}" for m in MECHANISMS) + f", macro {_k(kap['macro'])}. "
                f"No consensus label: {cov['no_consensus_label']} of {mech['attributed']} "
                f"(only the first judge supports one: {cov['only_first_judge']}; only the second: "
                f"{cov['only_second_judge']}; disjoint: {cov['disjoint']}; neither: {cov['jointly_none']}). "
                f"Supported verdicts dropped for missing or wrong evidence: {mech['evidence_dropped']}; "
                f"unreadable attributions: {mech['attribution_malformed']}."))
        out.append(Section("Failure mechanisms (M01–M04)", items))
    return out
