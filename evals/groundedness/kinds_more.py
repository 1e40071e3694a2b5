# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""More kinds: nginx, CoreDNS and JVM alerts, log lines through Loki, runbooks, no evidence."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from evals.groundedness import evidence
from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    Wording,
    commas,
    humanize_duration,
    kilo,
    pct,
    plain,
    wan,
)
from evals.groundedness.kinds_alerts import am, base_view, prom, since

W = Wording


# -- nginx ----------------------------------------------------------------------------


def _ngx5_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-gateway"),
        "ns": n.name(prefix="ns-"),
        "ratio": round(rng.uniform(0.021, 0.094), 4),
        "thr": 0.02,
        "win": 5,
        **since(rng),
    }


def _ngx5_view(v: Values) -> View:
    return {**base_view(v), "ratio_pct": pct(v["ratio"]), "thr_pct": pct(v["thr"])}


def _ngx5_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "NginxHighHttp5xxErrorRate",
        "service": v["app"],
        "namespace": v["ns"],
        "job": "nginx-exporter",
    }
    notes = {
        "summary": f"{v['app']} returns too many 5xx responses",
        "description": f"Share of 5xx responses of {v['app']} over the last {v['win']}m is "
        f"{plain(v['ratio'])} (threshold {plain(v['thr'])}).",
        "value": plain(v["ratio"]),
        "threshold": plain(v["thr"]),
    }
    return am(run_id, v, labels, notes)


NGINX_5XX = Kind(
    name="nginx_5xx_rate",
    source="alertmanager/nginx-exporter",
    query_en="Why are users seeing errors?",
    query_zh="为什么用户看到报错？",
    make=_ngx5_make,
    view=_ngx5_view,
    evidence=_ngx5_ev,
    wordings=(
        W(
            "en",
            "{app} answers {ratio_pct} of requests with a 5xx status, above the {thr_pct} threshold.",
            ("value=ratio:ratio", "threshold=thr:ratio", "service=app"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cmp:above>below", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Over the last {win} minutes the 5xx error rate of {app} was {ratio_pct}.",
            ("window=win:minutes", "value=ratio:ratio", "service=app"),
            ("time:win", "ent:app", "swap:ratio:thr", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的 5xx 错误率为 {ratio_pct}，超过 {thr_pct} 的阈值。",
            ("service=app", "value=ratio:ratio", "threshold=thr:ratio"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cmp:超过>低于", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "最近 {win} 分钟 {app} 的 5xx 占比是 {ratio}，告警已持续 {dur_zh}。",
            ("window=win:minutes", "value=ratio:ratio", "duration=dur"),
            ("time:win", "num:ratio", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("an upstream pool that is exhausted",), "zh": ("上游连接池耗尽",)},
    conclusions={
        "en": ("rolling back the last release will fix it",),
        "zh": ("回滚上一次发布就能解决",),
    },
)


def _rps_make(rng: random.Random, n: Names) -> Values:
    return {"app": n.name("-gateway"), "rps": rng.randint(51, 190) * 10, "thr": 500, **since(rng)}


def _rps_view(v: Values) -> View:
    return {**base_view(v), "rps_k": kilo(v["rps"]) if v["rps"] >= 1000 else str(v["rps"])}


def _rps_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {"alertname": "NginxHighRequestRate", "service": v["app"], "job": "nginx-exporter"}
    notes = {
        "summary": f"High request rate on {v['app']}",
        "description": f"nginx is serving {v['rps']} requests per second (threshold {v['thr']}).",
        "current_value": str(v["rps"]),
        "threshold": str(v["thr"]),
        "unit": "req/s",
    }
    return am(run_id, v, labels, notes)


NGINX_RPS = Kind(
    name="nginx_request_rate",
    source="alertmanager/nginx-exporter",
    query_en="Is traffic unusually high?",
    query_zh="流量是不是异常高？",
    make=_rps_make,
    view=_rps_view,
    evidence=_rps_ev,
    wordings=(
        W(
            "en",
            "{app} is serving RPS {rps}, against a threshold of {thr}.",
            ("value=rps:req/s", "threshold=thr:req/s", "service=app"),
            ("num:rps", "swap:rps:thr", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Request rate on {app} reached {rps_k} req/s, more than the {thr} req/s alert threshold.",
            ("value=rps:req/s", "threshold=thr:req/s"),
            ("num:rps", "cmp:more than>less than", "unit:{rps_k} req/s>{rps_k} req/min", "concl"),
            excerpt=0,
        ),
        W(
            "zh",
            "{app} 的 QPS 达到 {rps}，阈值是 {thr}。",
            ("service=app", "value=rps:req/s", "threshold=thr:req/s"),
            ("num:rps", "swap:rps:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 每秒请求数 {rps}，高于 {thr} 的告警阈值，自 {since} UTC 起触发。",
            ("value=rps:req/s", "threshold=thr:req/s", "active_at=since"),
            ("time:since", "cmp:高于>低于", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a retry storm from a mobile client",), "zh": ("移动端的重试风暴",)},
)


# -- CoreDNS ----------------------------------------------------------------------------


def _servfail_make(rng: random.Random, n: Names) -> Values:
    return {
        "server": f"dns://:{rng.choice((53, 1053))}",
        "zone": f"{n.word()}.{n.word()}.svc.cluster.local",
        "pod": f"coredns-{rng.randint(5, 9)}d{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "ratio": round(rng.uniform(0.031, 0.19), 3),
        "thr": 0.03,
        **since(rng),
    }


def _servfail_view(v: Values) -> View:
    return {**base_view(v), "ratio_pct": pct(v["ratio"], 1), "thr_pct": pct(v["thr"], 0)}


def _servfail_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "CoreDNSErrorsHigh",
        "pod": v["pod"],
        "server": v["server"],
        "job": "coredns",
    }
    notes = {
        "summary": "CoreDNS is returning SERVFAIL.",
        "description": f"CoreDNS is returning SERVFAIL for {pct(v['ratio'], 1)} of requests for zone {v['zone']}.",
        "value": plain(v["ratio"]),
    }
    expr = 'sum(rate(coredns_dns_responses_total{rcode="SERVFAIL"}[5m])) / sum(rate(coredns_dns_responses_total[5m])) > 0.03'
    return am(run_id, v, labels, notes, expr=expr)


COREDNS_SERVFAIL = Kind(
    name="coredns_servfail",
    source="alertmanager/coredns",
    query_en="Is DNS failing?",
    query_zh="DNS 解析是不是有问题？",
    make=_servfail_make,
    view=_servfail_view,
    evidence=_servfail_ev,
    wordings=(
        W(
            "en",
            "CoreDNS answers {ratio_pct} of queries for {zone} with SERVFAIL, above the {thr_pct} threshold.",
            ("value=ratio:ratio", "threshold=thr:ratio", "zone=zone"),
            ("num:ratio", "ent:zone", "cmp:above>below", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "The SERVFAIL ratio on {pod} is {ratio}.",
            ("labels.pod=pod", "value=ratio:ratio"),
            ("num:ratio", "unit:{ratio}>{ratio}%", "ent:pod", "concl"),
            excerpt=0,
        ),
        W(
            "zh",
            "{zone} 的 DNS 请求中有 {ratio_pct} 返回 SERVFAIL。",
            ("zone=zone", "value=ratio:ratio"),
            ("num:ratio", "ent:zone", "neg:有 {ratio_pct} 返回>没有 {ratio_pct} 返回", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "CoreDNS pod {pod} 的 SERVFAIL 比例为 {ratio}，超过 {thr} 的阈值。",
            ("labels.pod=pod", "value=ratio:ratio", "threshold=thr:ratio"),
            ("swap:ratio:thr", "cmp:超过>低于", "concl"),
            excerpt=0,
        ),
    ),
    causes={"en": ("the upstream resolver being unreachable",), "zh": ("上游解析服务器不可达",)},
)


def _dnslat_make(rng: random.Random, n: Names) -> Values:
    return {
        "pod": f"coredns-{rng.randint(5, 9)}f{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "app": n.name("-dns"),
        "p99": round(rng.uniform(0.31, 2.4), 3),
        "thr": 0.25,
        "hold": 600,
        **since(rng),
    }


def _dnslat_view(v: Values) -> View:
    return {
        **base_view(v),
        "p99_ms": str(round(v["p99"] * 1000)),
        "thr_ms": str(round(v["thr"] * 1000)),
    }


def _dnslat_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "CoreDNSLatencyHigh",
        "pod": v["pod"],
        "service": v["app"],
        "job": "coredns",
    }
    notes = {
        "summary": "CoreDNS p99 latency is high",
        "description": f"CoreDNS p99 request latency on {v['pod']} is above {v['thr']}s.",
    }
    lhs = "histogram_quantile(0.99, sum by (le, pod) (rate(coredns_dns_request_duration_seconds_bucket[5m])))"
    return prom(
        run_id,
        v,
        labels,
        notes,
        expr=f"{lhs} > {v['thr']}",
        lhs=lhs,
        live=plain(v["p99"]),
        hold_s=v["hold"],
    )


COREDNS_LATENCY = Kind(
    name="coredns_latency",
    source="prometheus-api/coredns",
    query_en="Is DNS slow?",
    query_zh="DNS 解析慢吗？",
    make=_dnslat_make,
    view=_dnslat_view,
    evidence=_dnslat_ev,
    wordings=(
        W(
            "en",
            "CoreDNS p99 latency on {pod} is {p99_ms} ms, above the {thr_ms} ms threshold.",
            ("value=p99:seconds", "threshold=thr:seconds", "labels.pod=pod"),
            ("num:p99", "cmp:above>below", "unit:{p99_ms} ms>{p99_ms} s", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{app} has had p99 DNS latency over {thr}s for at least 10 minutes.",
            ("service=app", "threshold=thr:seconds", "for=hold:seconds"),
            ("ent:app", "sub:time_window:10 minutes>6 hours", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{pod} 的 DNS 请求 p99 延迟为 {p99} 秒，高于 {thr} 秒。",
            ("labels.pod=pod", "value=p99:seconds", "threshold=thr:seconds"),
            ("num:p99", "swap:p99:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的 DNS p99 延迟 {p99_ms} 毫秒，告警条件需持续 10 分钟才触发。",
            ("service=app", "value=p99:seconds", "for=hold:seconds"),
            ("num:p99", "sub:time_window:10 分钟>1 小时", "concl"),
            excerpt=None,
        ),
    ),
)


# -- JVM ---------------------------------------------------------------------------------


def _gc_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-svc"),
        "inst": f"{n.word()}-{rng.randint(1, 9)}:8080",
        "pause": round(rng.uniform(61.0, 190.0), 1),
        "thr": 30,
        "win": 5,
        **since(rng),
    }


def _gc_view(v: Values) -> View:
    p = v["pause"]
    m, s = divmod(p, 60)
    return {
        **base_view(v),
        "pause_h": humanize_duration(p),
        "pause_en": f"{int(m)} minute{'s' if int(m) > 1 else ''} {s:.3g} seconds",
        "pause_zh": f"{int(m)} 分 {s:.3g} 秒",
    }


def _gc_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "JvmGcPauseHigh",
        "service": v["app"],
        "instance": v["inst"],
        "job": "jmx",
    }
    notes = {
        "summary": f"{v['app']} spends too long in GC",
        "description": f"GC pause time of {v['app']} in the last {v['win']}m is "
        f"{humanize_duration(v['pause'])} (threshold {v['thr']}s).",
    }
    return am(run_id, v, labels, notes)


JVM_GC_PAUSE = Kind(
    name="jvm_gc_pause",
    source="alertmanager/jmx-exporter",
    query_en="Is the JVM stuck in GC?",
    query_zh="JVM 是不是卡在 GC 上？",
    make=_gc_make,
    view=_gc_view,
    evidence=_gc_ev,
    wordings=(
        W(
            "en",
            "{app} spent {pause_en} in GC pauses over the last {win} minutes.",
            ("value=pause:seconds", "window=win:minutes", "service=app"),
            ("num:pause", "time:win", "ent:app", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "GC pause time on {inst} is {pause_h}, over the {thr}s threshold.",
            ("labels.instance=inst", "value=pause:seconds", "threshold=thr:seconds"),
            ("num:pause", "cmp:over>under", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 最近 {win} 分钟的 GC 停顿总计 {pause_zh}。",
            ("service=app", "window=win:minutes", "value=pause:seconds"),
            ("num:pause", "time:win", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "实例 {inst} 的 GC 停顿为 {pause_h}，超过了 {thr} 秒的阈值。",
            ("labels.instance=inst", "value=pause:seconds", "threshold=thr:seconds"),
            ("ent:inst", "cmp:超过了>未超过", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("an undersized young generation",), "zh": ("新生代设置过小",)},
    conclusions={"en": ("switching to ZGC will fix it",), "zh": ("换成 ZGC 就能解决",)},
)


def _heap_make(rng: random.Random, n: Names) -> Values:
    mx = rng.choice((2048, 4096, 8192))
    return {
        "app": n.name("-svc"),
        "inst": f"{n.word()}-{rng.randint(1, 9)}:8080",
        "used": round(mx * rng.uniform(0.88, 0.97) / 32) * 32,
        "max": mx,
        **since(rng),
    }


def _heap_view(v: Values) -> View:
    return {
        **base_view(v),
        "max_gib": f"{v['max'] / 1024:g}",
        "share": f"{v['used'] / v['max'] * 100:.0f}",
    }


def _heap_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "JvmHeapUsageHigh",
        "service": v["app"],
        "instance": v["inst"],
        "area": "heap",
        "job": "jmx",
    }
    notes = {
        "summary": f"JVM heap of {v['app']} is nearly full",
        "description": f"Heap used {v['used']}M of max {v['max']}M.",
        "value": f"{v['used']}M",
    }
    return am(run_id, v, labels, notes)


JVM_HEAP = Kind(
    name="jvm_heap",
    source="alertmanager/jmx-exporter",
    query_en="Is the JVM heap full?",
    query_zh="JVM 堆内存满了吗？",
    make=_heap_make,
    view=_heap_view,
    evidence=_heap_ev,
    wordings=(
        W(
            "en",
            "{app} has {used} MiB of heap in use out of a {max_gib} GiB maximum.",
            ("value=used:MiB", "max=max:MiB", "service=app"),
            ("num:used", "unit:{max_gib} GiB>{max_gib} MiB", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Heap on {inst} is nearly full: {used}M used of {max}M.",
            ("labels.instance=inst", "value=used:MiB", "max=max:MiB"),
            ("swap:used:max", "neg:is nearly full>is far from full", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的堆内存已用 {used} MiB，最大 {max_gib} GiB。",
            ("service=app", "value=used:MiB", "max=max:MiB"),
            ("num:used", "unit:{used} MiB>{used} GiB", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "实例 {inst} 的 JVM 堆快满了，已使用 {used}M / {max}M。",
            ("labels.instance=inst", "value=used:MiB", "max=max:MiB"),
            ("swap:used:max", "ent:inst", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a cache without eviction",), "zh": ("一个没有淘汰策略的缓存",)},
)


# -- logs through Loki ---------------------------------------------------------------------

DAY_NS = int(datetime(2026, 11, 18).timestamp()) * 10**9


def _ns(at: str, sec: int) -> str:
    hh, mm = (int(x) for x in at.split(":"))
    return str(DAY_NS + (hh * 3600 + mm * 60 + sec) * 10**9 + 123_000_000)


def _at(rng: random.Random) -> dict[str, Any]:
    return {
        "at": f"{rng.choice((8, 9))}:{rng.randint(0, 29):02d}".zfill(5),
        "s": rng.randint(0, 59),
    }


def _at_view(v: Values) -> View:
    return {**base_view(v), "ts": f"{v['at']}:{int(v['s']):02d}"}


def loki(run_id: str, v: Values, stream: dict[str, str], line: str, query: str) -> dict[str, Any]:
    streams = [
        {
            "stream": {"topic": "application-logs", **stream},
            "values": [[_ns(v["at"], int(v["s"])), line]],
        }
    ]
    return evidence.loki_logs(run_id, streams, {"log_topic": "application-logs", "query": query})


def _json_make(rng: random.Random, n: Names) -> Values:
    app = n.name("-api")
    return {
        "app": app,
        "pod": f"{app}-{rng.randint(5, 9)}a{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "upstream": f"{n.word()}-ledger",
        "lat": rng.randint(2100, 9800),
        "status": rng.choice((502, 503, 504)),
        "retries": rng.randint(2, 5),
        **_at(rng),
    }


def _json_view(v: Values) -> View:
    return {**_at_view(v), "lat_s": f"{v['lat'] / 1000:g}", "lat_c": commas(v["lat"])}


def _json_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f'{{"level":"error","msg":"upstream call failed","upstream":"{v["upstream"]}",'
        f'"status":{v["status"]},"latency_ms":{v["lat"]},"retries":{v["retries"]}}}'
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "error", "pod": v["pod"]},
        line,
        "upstream call failed",
    )


APP_JSON_LOG = Kind(
    name="app_json_log",
    source="loki/json-app-log",
    query_en="Why do calls fail?",
    query_zh="调用为什么失败？",
    make=_json_make,
    view=_json_view,
    evidence=_json_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "At {ts} {app} logged a failed call to {upstream} with status {status} after {lat_c} ms.",
            (
                "timestamp=ts",
                "service=app",
                "message.upstream=upstream",
                "message.status=status",
                "message.latency_ms=lat:ms",
            ),
            ("num:lat", "num:status", "ent:upstream", "time:at", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{app}'s call to {upstream} failed after {retries} retries, taking {lat_s} s.",
            ("service=app", "message.retries=retries", "message.latency_ms=lat:ms"),
            ("num:retries", "unit:{lat_s} s>{lat_s} ms", "neg:failed>succeeded", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 在 {ts} 调用 {upstream} 失败，状态码 {status}，耗时 {lat} 毫秒。",
            ("service=app", "timestamp=ts", "message.status=status", "message.latency_ms=lat:ms"),
            ("num:status", "num:lat", "time:at", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 调用 {upstream} 重试了 {retries} 次仍然失败。",
            ("service=app", "message.upstream=upstream", "message.retries=retries"),
            ("num:retries", "ent:upstream", "neg:仍然失败>后成功", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("an expired TLS certificate on the upstream",), "zh": ("上游的 TLS 证书过期",)},
)


def _acc_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-edge"),
        "client": f"10.{rng.randint(2, 250)}.{rng.randint(2, 250)}.{rng.randint(2, 250)}",
        "up": f"10.{rng.randint(2, 250)}.{rng.randint(2, 250)}.{rng.randint(2, 250)}:{rng.choice((8080, 8443, 9000))}",
        "path": f"/api/v{rng.randint(1, 3)}/{n.word()}",
        "method": rng.choice(("POST", "PUT")),
        "status": rng.choice((502, 504)),
        "bytes": rng.randint(150, 600),
        "rt": round(rng.uniform(30.0, 60.0), 3),
        **_at(rng),
    }


def _acc_view(v: Values) -> View:
    return {**_at_view(v), "rt_p": plain(v["rt"])}


def _acc_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f'{v["client"]} - - [18/Nov/2026:{v["at"]}:{int(v["s"]):02d} +0000] "{v["method"]} {v["path"]} HTTP/1.1" '
        f'{v["status"]} {v["bytes"]} "-" "okhttp/4.12.0" rt={v["rt"]:.3f} upstream={v["up"]}'
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "info", "pod": f"{v['app']}-0"},
        line,
        str(v["status"]),
    )


NGINX_ACCESS = Kind(
    name="nginx_access_log",
    source="loki/nginx-access-log",
    query_en="Which requests failed at the edge?",
    query_zh="网关上哪些请求失败了？",
    make=_acc_make,
    view=_acc_view,
    evidence=_acc_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "A {method} to {path} returned {status} after {rt_p} seconds.",
            (
                "message.method=method",
                "message.path=path",
                "message.status=status",
                "message.request_time=rt:seconds",
            ),
            ("num:status", "num:rt", "ent:path", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{app} logged status {status} for {path}, proxied to upstream {up}.",
            ("service=app", "message.status=status", "message.upstream=up"),
            ("num:status", "ent:app", "neg:logged status>did not log status", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{ts} 客户端 {client} 的 {method} {path} 请求返回 {status}，请求耗时 {rt_p} 秒。",
            (
                "timestamp=ts",
                "message.client=client",
                "message.status=status",
                "message.request_time=rt:seconds",
            ),
            ("num:rt", "time:at", "unit:{rt_p} 秒>{rt_p} 毫秒", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 把 {path} 转发到上游 {up}，返回了 {status}。",
            ("service=app", "message.path=path", "message.upstream=up", "message.status=status"),
            ("num:status", "ent:path", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("the upstream pod being OOMKilled",), "zh": ("上游 pod 被 OOMKilled",)},
)


def _err_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-edge"),
        "server": f"{n.word()}.{n.word()}.example",
        "up": f"10.{rng.randint(2, 250)}.{rng.randint(2, 250)}.{rng.randint(2, 250)}:{rng.choice((8080, 9000))}",
        "path": f"/v{rng.randint(1, 3)}/{n.word()}",
        "conn": rng.randint(10000, 99999),
        "pid": rng.randint(20, 60),
        **_at(rng),
    }


def _err_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f"2026/11/18 {v['at']}:{int(v['s']):02d} [error] {v['pid']}#{v['pid']}: *{v['conn']} upstream timed out "
        f"(110: Connection timed out) while reading response header from upstream, client: 10.9.8.7, "
        f'server: {v["server"]}, request: "GET {v["path"]} HTTP/1.1", upstream: "http://{v["up"]}{v["path"]}"'
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "error", "pod": f"{v['app']}-1"},
        line,
        "upstream timed out",
    )


NGINX_ERROR = Kind(
    name="nginx_error_log",
    source="loki/nginx-error-log",
    query_en="Why does the gateway time out?",
    query_zh="网关为什么超时？",
    make=_err_make,
    view=_at_view,
    evidence=_err_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "nginx on {app} timed out reading the response header from upstream {up} for {path}.",
            (
                "service=app",
                "message.upstream=up",
                "message.path=path",
                "message.error=upstream timed out",
            ),
            ("ent:path", "neg:timed out>did not time out", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "At {ts} {server} logged an upstream timeout (110: Connection timed out).",
            ("timestamp=ts", "message.server=server", "message.errno=110"),
            (
                "time:at",
                "ent:server",
                "sub:number_changed:110: Connection>111: Connection",
                "concl",
            ),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 在读取上游 {up} 响应头时超时，请求路径 {path}。",
            ("service=app", "message.upstream=up", "message.path=path"),
            ("ent:path", "neg:时超时>时没有超时", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{ts} {server} 出现 upstream timed out 错误（110: Connection timed out）。",
            ("timestamp=ts", "message.server=server", "message.errno=110"),
            ("time:at", "sub:number_changed:110>104", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a slow SQL query in the upstream",), "zh": ("上游中的慢 SQL",)},
)


def _dnslog_make(rng: random.Random, n: Names) -> Values:
    return {
        "client": f"10.{rng.randint(2, 250)}.{rng.randint(2, 250)}.{rng.randint(2, 250)}",
        "port": rng.randint(30000, 60000),
        "qid": rng.randint(1000, 65000),
        "qname": f"{n.word()}-db.{n.word()}.svc.cluster.local.",
        "qtype": rng.choice(("A", "AAAA")),
        "dur": round(rng.uniform(2.0, 5.0), 6),
        "pod": f"coredns-{rng.randint(5, 9)}e{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        **_at(rng),
    }


def _dnslog_view(v: Values) -> View:
    return {
        **_at_view(v),
        "qn": str(v["qname"]).rstrip("."),
        "dur_s": f"{v['dur']:.6f}",
        "dur_ms": f"{v['dur'] * 1000:.3f}",
    }


def _dnslog_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f'[INFO] {v["client"]}:{v["port"]} - {v["qid"]} "{v["qtype"]} IN {v["qname"]} udp 63 false 512" '
        f"SERVFAIL qr,rd 63 {v['dur']:.6f}s"
    )
    return loki(
        run_id, v, {"service": "coredns", "level": "info", "pod": v["pod"]}, line, "SERVFAIL"
    )


COREDNS_LOG = Kind(
    name="coredns_log",
    source="loki/coredns-log",
    query_en="Which DNS lookups fail?",
    query_zh="哪些 DNS 查询失败了？",
    make=_dnslog_make,
    view=_dnslog_view,
    evidence=_dnslog_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "The {qtype} lookup of {qn} from {client} got SERVFAIL after {dur_s}s.",
            (
                "message.qtype=qtype",
                "message.qname=qname",
                "message.client=client",
                "message.rcode=SERVFAIL",
                "message.duration=dur:seconds",
            ),
            ("num:dur", "ent:qname", "neg:got SERVFAIL>did not get SERVFAIL", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "CoreDNS pod {pod} answered query {qid} for {qn} with SERVFAIL.",
            ("labels.pod=pod", "message.id=qid", "message.qname=qname", "message.rcode=SERVFAIL"),
            ("num:qid", "ent:qname", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{ts} 来自 {client} 的 {qn} 解析返回 SERVFAIL，耗时 {dur_ms} 毫秒。",
            (
                "timestamp=ts",
                "message.client=client",
                "message.qname=qname",
                "message.duration=dur:seconds",
            ),
            ("num:dur", "unit:{dur_ms} 毫秒>{dur_ms} 秒", "time:at", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "CoreDNS 对 {qn} 的 {qtype} 查询返回了 SERVFAIL。",
            ("message.qname=qname", "message.qtype=qtype", "message.rcode=SERVFAIL"),
            ("ent:qname", "neg:返回了 SERVFAIL>没有返回 SERVFAIL", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("the database service having no endpoints",),
        "zh": ("数据库 Service 没有可用 endpoint",),
    },
)


def _gclog_make(rng: random.Random, n: Names) -> Values:
    heap = rng.choice((2048, 4096, 8192))
    before = heap - rng.randint(40, 200)
    return {
        "app": n.name("-svc"),
        "gcid": rng.randint(1000, 9000),
        "heap": heap,
        "before": before,
        "after": before - rng.randint(20, 300),
        "ms": round(rng.uniform(800.0, 4000.0), 3),
        **_at(rng),
    }


def _gclog_view(v: Values) -> View:
    return {
        **_at_view(v),
        "ms_p": f"{v['ms']:.3f}",
        "heap_gib": f"{v['heap'] / 1024:g}",
        "sec": f"{v['ms'] / 1000:.2f}",
    }


def _gclog_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f"[2026-11-18T{v['at']}:{int(v['s']):02d}.482+0000][gc] GC({v['gcid']}) Pause Full (Allocation Failure) "
        f"{v['before']}M->{v['after']}M({v['heap']}M) {v['ms']:.3f}ms"
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "info", "pod": f"{v['app']}-2"},
        line,
        "Pause Full",
    )


JVM_GC_LOG = Kind(
    name="jvm_gc_log",
    source="loki/jvm-gc-log",
    query_en="What do the GC logs show?",
    query_zh="GC 日志显示了什么？",
    make=_gclog_make,
    view=_gclog_view,
    evidence=_gclog_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "{app} ran a full GC pause (Allocation Failure) of {ms_p} ms.",
            ("service=app", "message.gc=Pause Full", "message.pause=ms:ms"),
            ("num:ms", "unit:{ms_p} ms>{ms_p} s", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "GC({gcid}) reclaimed heap from {before}M to {after}M of a {heap_gib} GiB heap.",
            (
                "message.gc_id=gcid",
                "message.before=before:MiB",
                "message.after=after:MiB",
                "message.heap=heap:MiB",
            ),
            ("swap:before:after", "num:after", "unit:{heap_gib} GiB>{heap_gib} TiB", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 发生了一次 Full GC，停顿 {ms_p} 毫秒，原因是 Allocation Failure。",
            ("service=app", "message.pause=ms:ms", "message.cause=Allocation Failure"),
            ("num:ms", "neg:发生了>没有发生", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "GC({gcid}) 之后堆从 {before}M 降到 {after}M，堆总量 {heap}M。",
            (
                "message.gc_id=gcid",
                "message.before=before:MiB",
                "message.after=after:MiB",
                "message.heap=heap:MiB",
            ),
            ("swap:before:after", "num:heap", "cause"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a memory leak in the session cache",), "zh": ("会话缓存的内存泄漏",)},
)


def _pglog_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-db"),
        "pid": rng.randint(10000, 60000),
        "other": rng.randint(10000, 60000),
        "table": f"{n.word()}_entries",
        "ms": round(rng.uniform(1200.0, 9999.0), 3),
        **_at(rng),
    }


def _pglog_view(v: Values) -> View:
    return {**_at_view(v), "ms_p": f"{v['ms']:.3f}", "sec": f"{v['ms'] / 1000:.1f}"}


def _pgdl_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f"{DAY_STR} {v['at']}:{int(v['s']):02d}.118 UTC [{v['pid']}] ERROR:  deadlock detected "
        f"DETAIL:  Process {v['pid']} waits for ShareLock on transaction 8812; blocked by process {v['other']}. "
        f'CONTEXT:  while updating tuple in relation "{v["table"]}"'
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "error", "pod": f"{v['app']}-0"},
        line,
        "deadlock detected",
    )


DAY_STR = "2026-11-18"

PG_DEADLOCK_LOG = Kind(
    name="postgres_deadlock_log",
    source="loki/postgres-log",
    query_en="Were there deadlocks in the database log?",
    query_zh="数据库日志里有死锁吗？",
    make=_pglog_make,
    view=_pglog_view,
    evidence=_pgdl_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "PostgreSQL on {app} detected a deadlock: process {pid} was blocked by process {other}.",
            (
                "service=app",
                "message.error=deadlock detected",
                "message.pid=pid",
                "message.blocker=other",
            ),
            (
                "swap:pid:other",
                "num:other",
                "neg:detected a deadlock>detected no deadlock",
                "cause",
            ),
            excerpt=None,
        ),
        W(
            "en",
            "The deadlock at {ts} happened while updating a tuple in {table}.",
            ("timestamp=ts", "message.relation=table"),
            ("time:at", "ent:table", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的 PostgreSQL 日志在 {ts} 报告了死锁，涉及表 {table}。",
            ("service=app", "timestamp=ts", "message.relation=table"),
            ("time:at", "ent:table", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "进程 {pid} 在等待 ShareLock，被进程 {other} 阻塞，出现了死锁。",
            ("message.pid=pid", "message.blocker=other", "message.error=deadlock detected"),
            ("swap:pid:other", "num:pid", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("two workers updating rows in opposite order",),
        "zh": ("两个 worker 以相反顺序更新行",),
    },
)


def _pgslow_ev(run_id: str, v: Values) -> dict[str, Any]:
    statement = " ".join(
        ("SELECT * FROM", v["table"], "WHERE account_id = $1 ORDER BY created_at DESC")
    )
    line = (
        f"{DAY_STR} {v['at']}:{int(v['s']):02d}.944 UTC [{v['pid']}] LOG:  duration: {v['ms']:.3f} ms  "
        f"statement: {statement}"
    )
    return loki(
        run_id, v, {"service": v["app"], "level": "info", "pod": f"{v['app']}-1"}, line, "duration"
    )


PG_SLOW_LOG = Kind(
    name="postgres_slow_statement_log",
    source="loki/postgres-log",
    query_en="Which queries are slow?",
    query_zh="哪些查询慢？",
    make=_pglog_make,
    view=_pglog_view,
    evidence=_pgslow_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "A SELECT on {table} took {ms_p} ms on {app}.",
            ("message.relation=table", "message.duration=ms:ms", "service=app"),
            ("num:ms", "unit:{ms_p} ms>{ms_p} s", "ent:table", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "At {ts} backend {pid} logged a statement lasting about {sec} seconds.",
            ("timestamp=ts", "message.pid=pid", "message.duration=ms:ms"),
            ("time:at", "num:ms", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 上查询 {table} 的语句耗时 {ms_p} 毫秒。",
            ("service=app", "message.relation=table", "message.duration=ms:ms"),
            ("num:ms", "unit:{ms_p} 毫秒>{ms_p} 秒", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{ts} 进程 {pid} 记录了一条对 {table} 的慢查询。",
            ("timestamp=ts", "message.pid=pid", "message.relation=table"),
            ("num:pid", "ent:table", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a missing index on account_id",), "zh": ("account_id 上缺少索引",)},
    conclusions={"en": ("the database is undersized",), "zh": ("数据库规格太小",)},
)


# -- runbooks ---------------------------------------------------------------------------


def _rb_make(rng: random.Random, n: Names) -> Values:
    return {
        "doc": n.name("-replica-lag"),
        "thr": rng.choice((180, 300, 600)),
        "win": rng.choice((10, 15, 20)),
        "job": f"{n.word()}-vacuum",
        "cap": rng.choice((26000, 31000, 42000)),
    }


def _rb_view(v: Values) -> View:
    return {
        **base_view(v),
        "cap_w": wan(v["cap"]),
        "cap_c": commas(v["cap"]),
        "cap_k": kilo(v["cap"]),
    }


def _rb_ev(run_id: str, v: Values) -> dict[str, Any]:
    block = {
        "doc_id": f"runbooks/{v['doc']}.md#checks",
        "title": f"Runbook {v['doc']}",
        "heading": "Checks",
        "content": f"If replication lag stays above {v['thr']} seconds for {v['win']} minutes, "
        f"pause the {v['job']} job on the primary. Do not restart the replica while WAL "
        f"replay is running. Keep the WAL backlog under {v['cap']} segments.",
    }
    return evidence.knowledge(run_id, [block], {"query": "replication lag checks"})


RUNBOOK = Kind(
    name="runbook_block",
    source="knowledge/runbook",
    query_en="What does the runbook say about replica lag?",
    query_zh="Runbook 对复制延迟怎么说？",
    make=_rb_make,
    view=_rb_view,
    evidence=_rb_ev,
    raw_path="$.evidence_blocks[0]",
    wordings=(
        W(
            "en",
            "The runbook says to pause the {job} job when replication lag stays above {thr} seconds for {win} minutes.",
            ("runbook.threshold=thr:seconds", "runbook.window=win:minutes", "runbook.action=job"),
            ("num:thr", "time:win", "cmp:above>below", "ent:job"),
            excerpt=None,
        ),
        W(
            "en",
            "Runbook {doc} warns against restarting the replica while WAL replay is running.",
            ("runbook.title=doc", "runbook.rule=do not restart during WAL replay"),
            ("neg:warns against restarting>recommends restarting", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "Runbook 建议：复制延迟超过 {thr} 秒并持续 {win} 分钟时，在主库暂停 {job} 任务。",
            ("runbook.threshold=thr:seconds", "runbook.window=win:minutes", "runbook.action=job"),
            ("num:thr", "time:win", "cmp:超过>低于"),
            excerpt=None,
        ),
        W(
            "zh",
            "Runbook {doc} 要求 WAL 积压保持在 {cap_w}个段以内。",
            ("runbook.title=doc", "runbook.cap=cap:segments"),
            ("num:cap", "cmp:以内>以上", "concl"),
            excerpt=None,
        ),
        W(
            "en",
            "The runbook caps the WAL backlog at {cap_k} segments.",
            ("runbook.cap=cap:segments",),
            ("num:cap", "cause"),
            excerpt=None,
        ),
    ),
    conclusions={
        "en": ("the current lag is caused by the vacuum job",),
        "zh": ("当前延迟就是这个任务造成的",),
    },
)


# -- no evidence --------------------------------------------------------------------------


def _nolog_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-service"),
        "term": rng.choice(("OOMKilled", "deadlock", "timeout", "SERVFAIL")),
    }


def _nolog_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.loki_logs(
        run_id, [], {"log_topic": "application-logs", "query": f"{v['app']} {v['term']}"}
    )


NONE_LOGS = Kind(
    name="no_evidence_logs",
    source="loki/no-evidence",
    query_en="Are there error logs?",
    query_zh="有没有错误日志？",
    make=_nolog_make,
    view=base_view,
    evidence=_nolog_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            "The log query for {app} {term} found no matching logs.",
            ("query.service=app", "query.text=term", "total=0"),
            (
                "ent:app",
                "neg:found no matching logs>found matching logs",
                "sub:unsupported_conclusion:found no matching logs>shows {app} never had a {term}",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "en",
            "Searching application-logs for {app} {term} returned no evidence.",
            ("query.service=app", "topic=application-logs", "total=0"),
            (
                "ent:app",
                "sub:unsupported_conclusion:returned no evidence>returned no evidence, so {app} is healthy",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "当前查询未检索到 {app} 的 {term} 相关日志。",
            ("query.service=app", "query.text=term", "total=0"),
            (
                "ent:app",
                "neg:未检索到>检索到了",
                "sub:unsupported_conclusion:当前查询未检索到 {app} 的 {term} 相关日志>{app} 没有发生任何 {term} 问题",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "在 application-logs 中按 {app} {term} 查询，结果为空。",
            ("query.service=app", "topic=application-logs", "total=0"),
            ("ent:app", "sub:unsupported_conclusion:结果为空>结果为空，说明该服务运行正常"),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)


def _nometric_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-api"),
        "alert": rng.choice(("HighErrorRate", "PodNotReady", "LatencyBudgetBurn")),
    }


def _nometric_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.request_alerts(
        run_id,
        [
            {
                "status": "firing",
                "labels": {"alertname": "Watchdog", "severity": "none"},
                "startsAt": "2026-11-18T00:00:00Z",
            }
        ],
        {"alert_name": v["alert"], "service": v["app"], "state": "firing"},
    )


NONE_METRICS = Kind(
    name="no_evidence_alerts",
    source="alertmanager/no-evidence",
    query_en="Is there an alert for this service?",
    query_zh="这个服务有告警吗？",
    make=_nometric_make,
    view=base_view,
    evidence=_nometric_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            "The alert query returned no firing {alert} alert for {app}.",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            (
                "ent:app",
                "neg:returned no firing>returned a firing",
                "sub:unsupported_conclusion:The alert query returned no firing {alert} alert for {app}>{app} has no {alert} problem",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "查询没有找到 {app} 正在触发的 {alert} 告警。",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            (
                "ent:app",
                "neg:没有找到>找到了",
                "sub:unsupported_conclusion:查询没有找到 {app} 正在触发的 {alert} 告警>{app} 一切正常，不存在 {alert} 问题",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "告警查询（alert_name={alert}, service={app}）没有返回任何结果。",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            ("ent:app", "sub:negation:没有返回任何结果>返回了 1 条结果"),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)


def _noknow_make(rng: random.Random, n: Names) -> Values:
    return {"topic": f"{n.word()} failover"}


def _noknow_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.knowledge(run_id, [], {"query": str(v["topic"])})


NONE_KNOWLEDGE = Kind(
    name="no_evidence_runbook",
    source="knowledge/no-evidence",
    query_en="Is there a runbook for this?",
    query_zh="有对应的 runbook 吗？",
    make=_noknow_make,
    view=base_view,
    evidence=_noknow_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            'The knowledge lookup for "{topic}" found no relevant runbook.',
            ("query.text=topic", "total=0"),
            (
                "ent:topic",
                "neg:found no relevant runbook>found a relevant runbook",
                "sub:unsupported_conclusion:found no relevant runbook>found no relevant runbook, so no failover procedure exists",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "知识库中未检索到与“{topic}”相关的 runbook。",
            ("query.text=topic", "total=0"),
            (
                "ent:topic",
                "neg:未检索到>检索到了",
                "sub:unsupported_conclusion:知识库中未检索到与“{topic}”相关的 runbook>该场景不需要任何 runbook",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)


# -- blackbox TLS expiry (durations in days) --------------------------------------------


def _ssl_make(rng: random.Random, n: Names) -> Values:
    return {
        "url": f"https://{n.word()}.{n.word()}.example",
        "d": rng.randint(2, 12),
        "h": rng.randint(1, 23),
        "m": rng.randint(1, 59),
        "thr_d": 14,
        **since(rng),
    }


def _ssl_view(v: Values) -> View:
    secs = int(v["d"]) * 86400 + int(v["h"]) * 3600 + int(v["m"]) * 60
    return {**base_view(v), "left": humanize_duration(secs)}


def _ssl_ev(run_id: str, v: Values) -> dict[str, Any]:
    secs = int(v["d"]) * 86400 + int(v["h"]) * 3600 + int(v["m"]) * 60
    labels = {
        "alertname": "BlackboxSslCertificateWillExpireSoon",
        "instance": v["url"],
        "job": "blackbox",
    }
    notes = {
        "summary": f"SSL certificate of {v['url']} expires soon",
        "description": f"SSL certificate for {v['url']} expires in {humanize_duration(secs)} "
        f"(alert below {v['thr_d']} days).",
    }
    return am(
        run_id,
        v,
        labels,
        notes,
        expr=f"probe_ssl_earliest_cert_expiry - time() < 86400 * {v['thr_d']}",
    )


SSL_EXPIRY = Kind(
    name="blackbox_ssl_expiry",
    source="alertmanager/blackbox-exporter",
    query_en="When does the certificate expire?",
    query_zh="证书什么时候过期？",
    make=_ssl_make,
    view=_ssl_view,
    evidence=_ssl_ev,
    wordings=(
        W(
            "en",
            "The TLS certificate of {url} expires in {d} days {h} hours {m} minutes.",
            (
                "value=d:days",
                "value.hours=h:hours",
                "value.minutes=m:minutes",
                "labels.instance=url",
            ),
            ("num:d", "num:h", "unit:{d} days>{d} weeks", "ent:url", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{url}'s certificate has less than {thr_d} days left ({left}).",
            ("labels.instance=url", "threshold=thr_d:days", "value=d:days"),
            ("cmp:less than>more than", "ent:url", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{url} 的证书将在 {d} 天 {h} 小时 {m} 分钟后过期。",
            (
                "labels.instance=url",
                "value=d:days",
                "value.hours=h:hours",
                "value.minutes=m:minutes",
            ),
            ("num:d", "unit:{d} 天>{d} 周", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{url} 证书剩余有效期 {d} 天多，低于 {thr_d} 天的告警线。",
            ("labels.instance=url", "value=d:days", "threshold=thr_d:days"),
            ("num:d", "cmp:低于>高于", "swap:d:thr_d", "concl"),
            excerpt=2,
        ),
    ),
    causes={
        "en": ("the ACME challenge failing behind the new ingress",),
        "zh": ("新 ingress 后面的 ACME 校验失败",),
    },
    conclusions={
        "en": ("cert-manager renewal is broken",),
        "zh": ("cert-manager 的自动续期已经失效",),
    },
)
