"""The report of ``vouch eval premise`` (:mod:`vouchsql.evals.premise`), from its metrics and
records alone: the tables per setting, per flaw code and between settings, and how the
measures depart from PremiseSQL's."""

from __future__ import annotations

from .datasets import FLAW_CODES, FLAW_NAMES
from .report import Figure, Report, Section, Table, Text, bars_png, manifest_section, with_ci


def build_report(metrics: dict, records: list[dict], manifest: dict, *, replay_of: str | None = None) -> Report:
    settings = list(metrics["settings"])
    boot = metrics["bootstrap"]
    intro = [Text(f"{metrics['n_flawed']} flawed questions and {metrics['n_original']} originals in "
                  f"{metrics['n_pairs']} pairs. Intervals: percentile bootstrap over question pairs, "
                  f"{boot['replicates']:,} resamples (seed {boot['seed']}); per flaw code, resampled within the code. "
                  "SQL is SQL behaviour normalised to [0, 1] (2 = complete abstention).")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}`: every number recomputed from the stored replies (no model call)."))
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
                                            "behaviour 0 / 1 / 2", "malformed"], flawed_rows)]),
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
    sections.append(Section("How this departs from PremiseSQL", [Text(
        "- DET is read from the structured output (`is_valid = false`); Base, which has no `is_valid`, detects only by "
        "abstaining (`sql` null). The paper's two model judges read the reason text.\n"
        "- TYPE compares a structured `flaw_code` with the gold code; the Implicit and Explicit prompts list the nine "
        "codes so that the field can be filled. Base TYPE is not measured.\n"
        "- SQL behaviour: 2 no SQL; 1 SQL given with `is_valid = false`, or SQL that fails the statement gate or does "
        "not run; 0 otherwise.\n"
        "- The paper's settings see the schema as CREATE TABLE statements; Vouch's assess step sees it as "
        "`vouch ask` shows it, with the data profile, and no recorded definitions or hint.\n"
        "- Vouch's assess step writes no SQL: SQL behaviour 2 when it stops the question, 0 when it passes it on; "
        "GEN = VAL; EX not measured. E1.1 answered as interpretations counts as not detected.\n"
        "- Malformed replies are left out of their setting's measures and counted; only the assess step gets a repair "
        "request (Vouch's own behaviour).")]))
    errors = [r for r in records if r.get("error")]
    if errors:
        sections.append(Section("Model errors", [Text("\n".join(f"- {r['key']}: {r['error']}" for r in errors[:50]))]))
    skipped = [r for r in records if r.get("skipped")]
    if skipped:
        sections.append(Section("Skipped", [Text("\n".join(f"- {r['key']}: {r['skipped']}" for r in skipped[:50]))]))
    sections.append(manifest_section(manifest))
    return Report(title="Premise critique (PremiseSQL settings and Vouch's assess step)",
                  command=manifest.get("command"), intro=intro, sections=sections, manifest=manifest)



def _per_flaw_rows(metrics: dict, settings: list[str], measure: str) -> list[list[str]]:
    rows = []
    for code in FLAW_CODES:
        row = [f"{code} {FLAW_NAMES[code]}"]
        for s in settings:
            e = metrics["settings"][s]["by_flaw"].get(code)
            row.append(with_ci(e[measure], e[f"{measure}_ci"], digits=2) if e else "—")
        rows.append(row)
    return rows
