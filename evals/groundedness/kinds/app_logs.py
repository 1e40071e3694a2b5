# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Log kinds of applications and proxies: JSON logs, nginx, CoreDNS."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    commas,
    plain,
)
from evals.groundedness.kinds.alert_sources import W
from evals.groundedness.kinds.log_sources import _at, _at_view, loki


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
