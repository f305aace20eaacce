"""Tables and the issue-17 targets of a :mod:`bench.realtext` result."""

from __future__ import annotations

from typing import Any

from bench.common import print_table


def _name(n: int | None) -> str:
    return "lme-all" if n is None else f"lme-{n}"


def _check(what: str, value: float | None, limit: float, *, at_most: bool = True) -> dict:
    met = None if value is None else (value <= limit if at_most else value >= limit)
    sign = "<=" if at_most else ">="
    return {"target": f"{what} {sign} {limit:g}", "value": value, "met": met}


def targets(result: dict[str, Any], plan: Any) -> list[dict[str, Any]]:
    """Every target of issue 17 with the measured value and met / not met (None: not measured)."""
    out = []
    for n in (plan.slice_messages, plan.full_messages):
        name = _name(n)
        search = result["search"][name]
        for mode in ("all", "haystack"):
            r = search["ratios"].get(f"cw-lexical/{mode}", {})
            out.append(_check(f"{name} lexical {mode} p50 / FTS5 p50", r.get("p50_vs_fts5"), 0.5))
            out.append(_check(f"{name} lexical {mode} p95 / FTS5 p95", r.get("p95_vs_fts5"), 1.0))
            default = search["timings"].get(f"cw-default-daemon/{mode}", {})
            out.append(_check(f"{name} default {mode} p50 ms (daemon)", default.get("p50_ms"), 50))
        for mode in ("all", "haystack"):
            ratio = search["while_embedding"]["ratio_to_idle"].get(f"cw-default-daemon/{mode}", {})
            out.append(
                _check(f"{name} default {mode} while embedding p50 / idle", ratio.get("p50"), 1.5)
            )
    full = result["builds"][_name(plan.full_messages)]
    through = result.get("daemon_import", {}).get(_name(plan.full_messages), {})
    out.append(_check("admission msg/s (cw import, daemon)", through.get("messages_per_s"), 2000,
                      at_most=False))  # fmt: skip
    out.append(_check("admission msg/s (embedded, indexing inline)", full["import_messages_per_s"],
                      2000, at_most=False))  # fmt: skip
    out.append(_check("indexing msg/s", full.get("index_messages_per_s"), 1000, at_most=False))
    out.append(_check("disk / text bytes", full["disk_vs_text"], 2.5))
    from cwcore.semantic.index import DEFAULT_MODE

    unit = result["embedding"][DEFAULT_MODE]  # the unit cw embeds today
    out.append(_check(f"embedding {DEFAULT_MODE} units/s", unit["texts_per_s"], 50, at_most=False))
    small = result["preflight"][_name(plan.preflight_messages)]["latency"]
    big = result["preflight"][_name(plan.full_messages)]["latency"]
    out.append(_check(f"preflight {_name(plan.preflight_messages)} p50 ms", small["p50_ms"], 5))
    out.append(_check(f"preflight {_name(plan.preflight_messages)} p95 ms", small["p95_ms"], 10))
    out.append(_check(f"preflight {_name(plan.full_messages)} p50 ms", big["p50_ms"], 10))
    return out


def _ms(p: dict[str, Any] | None) -> str:
    if not p:
        return "-"
    return f"{p['p50_ms']:.1f} / {p['p95_ms']:.1f} / {p['max_ms']:.1f}"


def report(result: dict[str, Any], plan: Any) -> None:
    rows: list[tuple[str, ...]] = []
    for name, b in result["builds"].items():
        ix = b.get("indexing", {})
        rows.append(
            (
                str(name),
                f"{b['messages']:,}",
                f"{b['text_bytes_per_message']:.0f}",
                f"{b['import_messages_per_s']:,.0f}",
                f"{b.get('admit_only_messages_per_s', 0):,.0f}",
                f"{b.get('index_messages_per_s', 0):,.0f}",
                f"{b['disk_bytes_per_message']:,.0f} ({b['disk_vs_text']}x)",
                f"{b['import']['peak_rss_mb']:.0f}",
                f"{ix.get('admit', {}).get('peak_rss_mb', 0):.0f}",
                f"{ix.get('drain', {}).get('peak_rss_mb', 0):.0f}",
                "reused" if b["reused"] else "built",
            )
        )
    print_table(
        f"{plan.label}: builds (real text)",
        rows,
        (
            "corpus",
            "messages",
            "text B/msg",
            "import msg/s",
            "admit-only msg/s",
            "index msg/s",
            "disk B/msg (x text)",
            "import RSS MB",
            "admit RSS MB",
            "drain RSS MB",
            "cache",
        ),
    )
    rows = [
        (str(name), f"{d['messages']:,}", f"{d['seconds']:.1f}", f"{d['messages_per_s']:,.0f}",
         f"{d['outbox_depth_after_import']:,}", f"{d['daemon_peak_rss_mb'] or 0:.0f}")
        for name, d in result.get("daemon_import", {}).items()
    ]  # fmt: skip
    print_table(
        f"{plan.label}: cw import through a running daemon (fresh store, CLI start included)",
        rows,
        ("corpus", "messages", "seconds", "msg/s", "outbox left", "daemon RSS MB"),
    )
    for name, s in result["search"].items():
        rows = []
        for key, p in sorted(s["timings"].items()):
            server = p.get("server")
            rows.append((str(key), _ms(p), _ms(server) if server else ""))
        for key, p in sorted(s["while_embedding"]["timings"].items()):
            idle = s["idle_paced"].get(key)
            ratio = s["while_embedding"]["ratio_to_idle"].get(key, {})
            rows.append((f"{key} paced idle", _ms(idle), ""))
            rows.append((f"{key} while embedding (x{ratio.get('p50', '?')})", _ms(p), ""))
        print_table(
            f"{plan.label}: search at {name} ({s['documents']:,} turn documents, "
            f"{result['questions']} questions; load {s['load_before']} -> {s['load_after']})",
            rows,
            ("system/mode", "wall p50 / p95 / max ms", "daemon timing_ms p50 / p95 / max"),
        )
        if "profile_cw_lexical" in s:
            lines = s["profile_cw_lexical"]["cumulative"].splitlines()
            print(f"\n  cw-lexical below target at {name}; cProfile, top by cumulative time:")
            print("\n".join(lines[:40]))
        emb = s["while_embedding"]
        print(
            f"  ratios to FTS5: {s['ratios']}\n  daemon peak RSS {s['daemon_peak_rss_mb']} MB; "
            f"embedded meanwhile {emb['windows_embedded_meanwhile']} windows "
            f"({emb['embedding_windows_per_s_meanwhile']}/s), embedding daemon RSS "
            f"{emb['daemon_peak_rss_mb']} MB"
            + (
                "; NOTE: embedding finished during the phase, later searches met an idle worker"
                if emb["state_after"] == "complete"
                else ""
            )
        )
    print_table(
        f"{plan.label}: preflight through the daemon",
        [
            (
                name,
                _ms(p["latency"]),
                _ms(p["daemon_latency"]),
                str(p["outcomes"]),
                str(p["daemon_peak_rss_mb"]),
            )
            for name, p in result["preflight"].items()
        ],
        ("corpus", "client p50 / p95 / max ms", "daemon latencyMs", "outcomes", "daemon RSS MB"),
    )
    emb = result["embedding"]
    print_table(
        f"{plan.label}: embedding throughput, cold, {emb['sampled_windows']} sampled windows of "
        f"{emb['corpus_windows']:,}",
        [
            (
                unit,
                str(emb[unit]["texts"]),
                str(emb[unit]["texts_per_s"]),
                str(emb[unit]["windows_per_s"]),
                f"{emb[unit]['tokens_per_s']:,}",
                f"{emb[unit]['projected_complete_s'] / 60:.1f}",
            )
            for unit in ("window", "message", "head", "chunks")
        ]
        + [
            (
                f"handler {name} ({h['variant']}, graph revision {h.get('graph_revision', 1)}, "
                f"{h['batch_chars']:,} chars a call), "
                f"{h['speedup']}x",
                str(h["computed"]),
                "",
                str(h["windows_per_s"]),
                "",
                f"{h['projected_complete_s'] / 60:.1f}",
            )
            for name, h in emb.get("handlers", {}).items()
        ],
        ("unit", "texts", "texts/s", "windows/s", "tokens/s", "complete in min"),
    )
    print(f"\nload average before {result['load_before']}, after {result['load_after']}")
    print_table(
        f"{plan.label}: targets (issue 17)" + (" -- QUICK SIZES, not the targets' sizes"
                                                if plan.label.endswith("quick") else ""),
        [
            (t["target"], str(t["value"]), {True: "met", False: "NOT met", None: "-"}[t["met"]])
            for t in result["targets"]
        ],
        ("target", "measured", ""),
    )  # fmt: skip
