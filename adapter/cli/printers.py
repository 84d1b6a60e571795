"""How results look in a terminal. ``--json`` is for scripts; these are for people."""

from __future__ import annotations


def print_init(report) -> None:
    for change in report.changes:
        print(f"{change.action:>12}  {change.kind:<18} {change.name}")
        if change.diff:
            print("\n".join("              " + line for line in change.diff.splitlines()))
    print("nothing to change: the cluster already matches the assets" if not report.changed else f"index {report.alias} -> {report.index}")
    if report.default_pipeline:
        print(f"default search pipeline: {report.default_pipeline} (a hybrid query sent without one is fused by it)")


def print_result(result, *, explain: bool) -> None:
    for notice in result.notices:
        print(f"note: {notice}")
    print(f"{result.technique.value} | fused by {result.fused_by_label} | {len(result.hits)} hits | took {result.took_ms:.0f} ms (server), "
          f"{result.total_ms:.0f} ms (total)")
    if result.choice is not None:
        print("adaptive fusion: " + "; ".join(result.choice.reasons))
    header = f"{'#':>3}  {'score':>9}  {'id':<24} title"
    if explain:
        header += "   | bm25 rank/raw/norm/contrib | dense rank/raw/norm/contrib"
    print(header)
    for h in result.hits:
        line = f"{h.rank:>3}  {h.score:>9.4f}  {h.id[:24]:<24} {(h.title or h.text)[:48]}"
        if explain and h.legs:
            cells = []
            for leg in h.legs:
                if leg.rank is None and leg.normalized_score is None:
                    cells.append("-")
                else:
                    cells.append(f"{leg.rank or '-'}/{leg.raw_score if leg.raw_score is not None else float('nan'):.3f}/"
                                 f"{leg.normalized_score if leg.normalized_score is not None else float('nan'):.4f}/{leg.contribution:.4f}")
            line += "   | " + " | ".join(cells)
        if h.rerank_score is not None or h.mmr_score is not None:
            line += f"   (first stage {h.first_stage_score:.4f})"
        print(line)


def print_advice(advice, choices=None) -> None:
    """The class of each query and, with ``choices`` (one FusionChoice per query), the adaptive weights."""
    for i, c in enumerate(advice.queries):
        line = f"{c.kind:>7}  {c.text[:70]:<70}  {'; '.join(c.reasons)}"
        if choices:
            w = choices[i].weights
            line += f"  -> {choices[i].policy}: bm25 {w[0]:.2f} / dense {w[1]:.2f}"
        print(line)
    print(f"\n{len(advice.queries)} queries: {advice.natural_share:.0%} natural language, {advice.exact_share:.0%} exact terms")
    print(f"recommendation: {advice.recommendation} ({advice.reason})")


def print_eval(report) -> None:
    from ..evaluation import format_table

    print(format_table(report))
    for name, result in report.results.items():
        for notice in result.notices:
            print(f"note ({name}): {notice}")
    classes = [(name, r.by_class) for name, r in report.results.items() if r.by_class]
    if classes:
        print("\nnDCG@10 by query class (adapter.advisor): exact-term | natural language")
        for name, by in classes:
            cells = [f"{by[k]['ndcg@10']:.4f} ({by[k]['queries']})" if k in by else "-" for k in ("exact", "natural")]
            print(f"  {name:<40} {cells[0]:>16} | {cells[1]:>16}")
    if report.settings.get("default_technique"):
        print(f"the product's default: {report.settings['default_technique']}")
    if report.learned:
        print(f"learned adaptive policy ({report.learned['family']}; cross-validated on the train split: "
              f"{report.learned['cross_validated_ndcg@10']}): {report.learned['policy']['parameters']}")
    parity = report.settings.get("rrf_parity")
    if parity:
        print(f"server RRF vs client-rrf: {parity['identical_up_to_ties']}/{parity['queries']} queries ranked identically up to the "
              f"order of tied scores ({parity['identical_order']} in exactly the same order)")
